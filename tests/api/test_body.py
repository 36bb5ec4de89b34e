"""Request bodies at the edges of JSON: keys given twice, numbers too small for a double, integers longer
than Python reads, and years that no URL could address; in-process on both stores, then on a live server.
And the body budget's accounting: a body is charged as its bytes arrive, and given back however it ends."""

import json

import falcon
import falcon.testing
import gevent
import gevent.event
import pytest

from growth_gevent.api.body_budget import BodyBudget
from growth_gevent.api.body_reader import read_body
from growth_gevent.api.strict_json import parse_json
from growth_gevent.core.records import MAX_YEAR
from tests.helpers.support import load

RECORD = {"Country": "A", "Indicator": "B", "Value": 1.5, "Year": 2002}
LONG_DIGITS = "1" * 4301  # one more than Python's int() reads from text
TOO_LONG = "request body has an integer of more than 4300 digits; no field takes one"
UNDERFLOW = ("request body has the number {}, too small for a double: it would be read as 0; send 0, or a "
             "number of at least 5e-324 in size")
YEAR_RANGE = "Year must be between -999999999 and 999999999"


def post_raw(client, body, status):
    return client.post("/api/v1/growth", body, content_type="application/json", status=status)


def put_raw(client, body, status, year=2002):
    return client.put(f"/api/v1/growth/A/B/{year}", body, content_type="application/json", status=status)


class TestDuplicateKeys:
    @pytest.mark.parametrize("body, key", [
        ('[{"Country": "A", "Country": "B", "Indicator": "C", "Value": 1, "Year": 1}]', '"Country"'),
        ('[{"Country": "A", "Indicator": "C", "Value": 1, "Year": 1, "Year": 2}]', '"Year"'),
        ('[{"Country": "A:B", "Indicator": "C", "Value": 1, "Year": 1, "Value": 2}]', '"Value"'),
        ('[{"Country": "A", "Indicator": "C", "Value": 1, "Year": 1, "Note": {"x": 1, "x": 2}}]', '"x"'),
    ], ids=["country", "year", "colon-in-a-name", "nested"])
    def test_a_key_twice_in_a_bulk_record_is_400_naming_it_and_queues_nothing(self, client, store, body, key):
        response = post_raw(client, body, 400)
        assert response.json == {"msg": f"request body is not valid JSON for this service: an object has the key "
                                        f"{key} twice"}
        assert store.bulk_status().jobs_accepted == 0

    def test_a_key_twice_in_a_put_body_is_400(self, client, store):
        response = put_raw(client, '{"value": 1, "value": 2}', 400)
        assert response.json == {"msg": 'request body is not valid JSON for this service: an object has the key '
                                        '"value" twice'}
        assert store.get(("A", "B", 2002)) is None

    @pytest.mark.parametrize("record", [
        {**RECORD, "Country": "A:B{C}"},
        {**RECORD, "Note": {"x": 1, "y": [{"z": 2}]}},
        {**RECORD, "Indicator": '"quoted": {}'},
    ], ids=["colon-and-braces-in-a-name", "nested-objects", "json-in-a-name"])
    def test_what_spoils_the_fast_count_without_a_duplicate_is_accepted(self, client, store, record):
        load(client, store, [record, {**RECORD, "Year": 2003}])
        assert store.size() == 2

    def test_a_long_key_is_quoted_shortened(self):
        with pytest.raises(Exception) as refused:
            parse_json(json.dumps({"k" * 100: 1}).replace("}", ', "' + "k" * 100 + '": 2}').encode(), unique_keys=True)
        assert refused.value.description == ('request body is not valid JSON for this service: an object has the '
                                             'key "' + "k" * 39 + '..." twice')


class TestTinyNumbers:
    @pytest.mark.parametrize("literal", ["1e-400", "-2.5E-330", "0.0000001e-320", "2e-324"])
    def test_a_non_zero_number_that_underflows_is_422_in_a_post_and_a_put(self, client, store, literal):
        response = post_raw(client, json.dumps([RECORD]).replace("1.5", literal), 422)
        assert response.json == {"msg": UNDERFLOW.format(literal)}
        assert put_raw(client, f'{{"value": {literal}}}', 422).json == {"msg": UNDERFLOW.format(literal)}
        assert store.bulk_status().jobs_accepted == 0
        assert store.get(("A", "B", 2002)) is None

    @pytest.mark.parametrize("literal, value", [("5e-324", 5e-324), ("3e-324", 5e-324), ("0e-400", 0.0),
                                                ("-0.0E-5", -0.0), ("1.5e-5", 1.5e-5), ("2.2250738585072014e-308",
                                                                                        2.2250738585072014e-308)])
    def test_zero_and_the_smallest_doubles_are_kept(self, client, literal, value):
        response = put_raw(client, f'{{"value": {literal}}}', 201)
        assert repr(response.json["Value"]) == repr(value)


class TestLongIntegers:
    @pytest.mark.parametrize("body", [f'[{{"Country": "A", "Indicator": "B", "Value": 1, "Year": {LONG_DIGITS}}}]',
                                      f'[{{"Country": "A", "Indicator": "B", "Value": {LONG_DIGITS}, "Year": 1}}]'],
                             ids=["year", "value"])
    def test_an_integer_longer_than_python_reads_is_422_in_plain_words(self, client, store, body):
        response = post_raw(client, body, 422)
        assert response.json == {"msg": TOO_LONG}
        assert "sys." not in response.text
        assert store.bulk_status().jobs_accepted == 0

    def test_in_a_put_too(self, client):
        assert put_raw(client, f'{{"value": {LONG_DIGITS}}}', 422).json == {"msg": TOO_LONG}


class TestYears:
    @pytest.mark.parametrize("year", [MAX_YEAR + 1, -MAX_YEAR - 1, 10 ** 4299, -(10 ** 30)])
    def test_a_year_that_no_url_could_address_is_422_in_a_post(self, client, store, year):
        response = post_raw(client, json.dumps([RECORD, {**RECORD, "Year": year}]), 422)
        assert response.json == {"msg": f"record 1: {YEAR_RANGE}"}
        assert store.bulk_status().jobs_accepted == 0

    @pytest.mark.parametrize("year", [MAX_YEAR + 1, -MAX_YEAR - 1, 10 ** 3999])
    def test_and_in_a_put(self, client, store, year):
        assert put_raw(client, '{"value": 1}', 422, year=year).json == {"msg": YEAR_RANGE}
        assert store.size() == 0

    @pytest.mark.parametrize("year", [MAX_YEAR, -MAX_YEAR, 0, 20021231])
    def test_the_widest_years_are_stored_and_reached_by_their_url(self, client, store, year):
        load(client, store, [{**RECORD, "Year": year}])
        assert client.get(f"/api/v1/growth/A/B/{year}").json == {**RECORD, "Year": year}
        client.delete(f"/api/v1/growth/A/B/{year}", status=204)
        assert put_raw(client, '{"value": 1}', 201, year=year).json["Year"] == year


# --- On a live server ------------------------------------------------------------------------------




class Arriving:
    """A request body's stream: each read returns at most the next of ``parts`` (a client's packets), and
    notes ``(bytes received before it, size asked, bytes the budget held during it)``. ``then``: what the
    read after the last part raises instead of returning end of file (the client's fault), or an Event it
    waits for first (a client that stalls)."""

    def __init__(self, budget, parts, then=None):
        self._budget = budget
        self._parts = list(parts)
        self._then = then
        self.received = 0
        self.reads = []

    def read(self, size):
        self.reads.append((self.received, size, self._budget.held))
        if not self._parts:
            if isinstance(self._then, gevent.event.Event):
                self._then.wait()
            elif self._then is not None:
                raise self._then
            return b""
        part = self._parts[0][:size]
        self._parts[0] = self._parts[0][size:]
        if not self._parts[0]:
            self._parts.pop(0)
        self.received += len(part)
        return part


def request(stream, declared=None, chunked=False):
    """A falcon request whose body comes from ``stream``: ``declared`` in its Content-Length, or chunked."""
    environ = falcon.testing.create_environ("/api/v1/growth", method="POST", body=b"",
                                            headers={"Content-Type": "application/json"})
    environ["wsgi.input"] = stream
    environ.pop("CONTENT_LENGTH", None)
    if not chunked:
        environ["CONTENT_LENGTH"] = str(declared)
    return falcon.Request(environ)


KiB = 1024
PACKETS = [b"[" + b" " * (1500 - 1)] + [b" " * 1500] * 200 + [b"]"]  # ~300 kB in packets of 1,500 bytes
BODY = b"".join(PACKETS)


class TestChargedAsReceived:
    @pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
    def test_a_read_is_charged_at_most_what_arrived_before_it_or_4_kib(self, chunked):
        budget = BodyBudget(10 * 1024 * KiB)
        stream = Arriving(budget, PACKETS)
        with budget.reserve() as reservation:
            assert read_body(request(stream, len(BODY), chunked), 8 * 1024 * KiB, reservation) == BODY
            assert budget.held == len(BODY)
        assert budget.held == 0
        for received, size, held in stream.reads:
            assert held == received + size  # what arrived, and what this read may bring
            assert size <= max(4 * KiB, received)

    def test_bodies_that_declare_8_mib_and_send_a_byte_hold_that_byte_and_their_next_read(self):
        budget = BodyBudget(64 * 1024 * KiB)
        client_sends = gevent.event.Event()
        stalled = [gevent.spawn(read_whole, budget, Arriving(budget, [b"["], then=client_sends), 8 * 1024 * KiB)
                   for _ in range(50)]
        gevent.idle()
        assert budget.held == 50 * (1 + 4 * KiB)  # of 400 MiB declared
        assert read_whole(budget, Arriving(budget, [b'{"value": 1.5}']), 14) == b'{"value": 1.5}'
        client_sends.set()
        gevent.joinall(stalled, raise_error=True)
        assert budget.held == 0

    def test_next_bytes_past_the_budget_are_503_with_retry_after_before_they_are_read(self):
        budget = BodyBudget(200 * KiB)
        with budget.reserve() as holding:
            held = read_body(request(Arriving(budget, [b" " * 150 * KiB]), 150 * KiB), 8 * 1024 * KiB, holding)
            assert len(held) == budget.held == 150 * KiB
            stream = Arriving(budget, PACKETS)
            with budget.reserve() as second, pytest.raises(falcon.HTTPServiceUnavailable) as refused:
                read_body(request(stream, len(BODY)), 8 * 1024 * KiB, second)
            assert refused.value.description == "too many request bodies in memory; retry later"
            assert (refused.value.headers["Retry-After"], refused.value.headers["Connection"]) == ("1", "close")
            # Read while its bytes fitted beside those held (its reads double: the last might have), then
            # refused before the read that could pass the budget.
            assert 25 * KiB < stream.received <= 50 * KiB
            assert budget.held == 150 * KiB
        assert budget.held == 0

    @pytest.mark.parametrize("then, status", [
        (TimeoutError(), 408), (ConnectionResetError(), 400), (ValueError("bad chunk"), 400)])
    def test_the_charge_is_given_back_however_the_body_ends(self, then, status):
        budget = BodyBudget(1024 * KiB)
        with budget.reserve() as reservation, pytest.raises(falcon.HTTPError) as ended:
            read_body(request(Arriving(budget, PACKETS[:50], then), len(BODY)), 8 * 1024 * KiB, reservation)
        assert ended.value.status_code == status
        assert budget.held == 0

    def test_a_chunked_body_past_the_limit_is_413_and_given_back(self):
        budget = BodyBudget(1024 * KiB)
        with budget.reserve() as reservation, pytest.raises(falcon.HTTPContentTooLarge):
            read_body(request(Arriving(budget, PACKETS), chunked=True), 100 * KiB, reservation)
        assert budget.held == 0

    def test_a_declared_length_past_the_limit_is_413_at_once_unread_and_uncharged(self):
        budget = BodyBudget(1024 * KiB)
        stream = Arriving(budget, PACKETS)
        with budget.reserve() as reservation, pytest.raises(falcon.HTTPContentTooLarge) as refused:
            read_body(request(stream, 100 * KiB + 1), 100 * KiB, reservation)
            assert budget.held == 0
        assert refused.value.headers["Connection"] == "close"
        assert stream.reads == []


def read_whole(budget, stream, declared):
    with budget.reserve() as reservation:
        return read_body(request(stream, declared), 8 * 1024 * KiB, reservation)
