"""A request body read into memory (growth_gevent/api/body_reader.py): charged to its budget for the bytes
received, never ahead of them, and given back however it ends; a gzipped body inflated as it arrives, held to
the limit once inflated; any other Content-Encoding a 415."""

import gzip
import json
import zlib

import falcon
import falcon.testing
import gevent
import gevent.event
import pytest

from growth_gevent.api.body_budget import BodyBudget
from growth_gevent.api.body_reader import READ_BLOCK, read_body
from tests.helpers.support import WAIT_SECONDS

KiB = 1024
MiB = 1024 * KiB
PACKETS = [b"[" + b" " * (1500 - 1)] + [b" " * 1500] * 200 + [b"]"]  # ~300 kB in packets of 1,500 bytes
BODY = b"".join(PACKETS)
RECORDS = [{"Country": "A", "Indicator": "B", "Value": 1.5, "Year": year} for year in range(50)]
CLIENT = "192.0.2.1"
# 64 MiB of spaces in 64 kB: one member of 1 MiB, 64 times (a stream of several members is one body).
BOMB = gzip.compress(b" " * MiB, compresslevel=9) * 64


class Arriving:
    """A request body's stream as http/bodies.py hands it over: each read returns at most the next of
    ``parts`` (a client's packets) and notes ``(bytes received before it, bytes the budget held during it)``.
    ``then``: what the read after the last part raises instead of returning end of file (the client's
    fault), or an Event it waits for first (a client that stalls)."""

    def __init__(self, budget, parts, then=None):
        self._budget = budget
        self._parts = list(parts)
        self._then = then
        self.received = 0
        self.reads = []

    def read(self, size):
        self.reads.append((self.received, self._budget.held))
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


def request(stream, declared=None, chunked=False, headers=None):
    """A falcon request whose body comes from ``stream``: ``declared`` in its Content-Length, or chunked."""
    environ = falcon.testing.create_environ("/api/v1/growth", method="POST", body=b"",
                                            headers={"Content-Type": "application/json", **(headers or {})})
    environ["wsgi.input"] = stream
    environ.pop("CONTENT_LENGTH", None)
    if not chunked:
        environ["CONTENT_LENGTH"] = str(declared)
    return falcon.Request(environ)


def budget_of(limit, client_limit=None):
    return BodyBudget(limit, 100 if client_limit is None else client_limit)


def read_whole(budget, stream, declared, max_bytes=8 * MiB, headers=None):
    with budget.reserve(CLIENT) as charge:
        return read_body(request(stream, declared, headers=headers), max_bytes, charge)


class TestChargedAsReceived:
    @pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
    def test_a_body_holds_what_arrived_before_each_read_and_nothing_ahead(self, chunked):
        budget = budget_of(10 * MiB)
        stream = Arriving(budget, PACKETS)
        with budget.reserve(CLIENT) as charge:
            assert read_body(request(stream, len(BODY), chunked), 8 * MiB, charge) == BODY
            assert budget.held == budget.held_by[CLIENT] == len(BODY)
        assert (budget.held, budget.held_by) == (0, {})
        assert all(held == received for received, held in stream.reads)

    def test_bodies_that_declare_8_mib_and_send_32_kib_hold_32_kib_each(self):
        budget = budget_of(64 * MiB)
        client_sends = gevent.event.Event()
        stalled = [gevent.spawn(read_whole, budget, Arriving(budget, [b"[" + b" " * (32 * KiB - 1)],
                                                            then=client_sends), 8 * MiB)
                   for _ in range(50)]
        gevent.idle()
        assert budget.held == 50 * 32 * KiB  # of 400 MiB declared
        client_sends.set()
        gevent.joinall(stalled, raise_error=True)
        assert budget.held == 0

    def test_the_bytes_that_pass_the_budget_are_503_with_retry_after_once_received(self):
        budget = budget_of(200 * KiB)
        with budget.reserve(CLIENT) as holding:
            holding.add(150 * KiB)
            stream = Arriving(budget, PACKETS)
            with pytest.raises(falcon.HTTPServiceUnavailable) as refused:
                read_whole(budget, stream, len(BODY))
            assert refused.value.description == "too many request bodies in memory; retry later"
            assert (refused.value.headers["Retry-After"], refused.value.headers["Connection"]) == ("1", "close")
            assert 50 * KiB < stream.received <= 50 * KiB + 1500  # read while its bytes fitted beside those held
            assert budget.held == 150 * KiB
        assert budget.held == 0

    @pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
    def test_a_body_that_fills_the_budget_to_the_byte_is_read_whole(self, chunked):
        budget = budget_of(len(BODY))
        with budget.reserve(CLIENT) as charge:
            assert read_body(request(Arriving(budget, PACKETS), len(BODY), chunked), 8 * MiB, charge) == BODY

    def test_a_full_budget_reads_nothing(self):
        budget = budget_of(200 * KiB)
        with budget.reserve("192.0.2.9") as holding:
            holding.add(200 * KiB)
            stream = Arriving(budget, PACKETS)
            with pytest.raises(falcon.HTTPServiceUnavailable):
                read_whole(budget, stream, len(BODY))
        assert stream.reads == []

    @pytest.mark.parametrize("then, status", [
        (TimeoutError(), 408), (ConnectionResetError(), 400), (ValueError("bad chunk"), 400)])
    def test_the_charge_is_given_back_however_the_body_ends(self, then, status):
        budget = budget_of(1 * MiB)
        with pytest.raises(falcon.HTTPError) as ended:
            read_whole(budget, Arriving(budget, PACKETS[:50], then), len(BODY))
        assert ended.value.status_code == status
        assert (budget.held, budget.held_by) == (0, {})

    def test_a_chunked_body_past_the_limit_is_413_and_given_back(self):
        budget = budget_of(1 * MiB)
        with budget.reserve(CLIENT) as charge, pytest.raises(falcon.HTTPContentTooLarge):
            read_body(request(Arriving(budget, PACKETS), chunked=True), 100 * KiB, charge)
        assert budget.held == 0

    def test_a_declared_length_past_the_limit_is_413_at_once_unread_and_uncharged(self):
        budget = budget_of(1 * MiB)
        stream = Arriving(budget, PACKETS)
        with pytest.raises(falcon.HTTPContentTooLarge) as refused:
            read_whole(budget, stream, 100 * KiB + 1, max_bytes=100 * KiB)
        assert refused.value.headers["Connection"] == "close"
        assert stream.reads == []


def gzipped(data, level=6):
    return gzip.compress(data, compresslevel=level)


def packets(data, size=1500):
    return [data[offset:offset + size] for offset in range(0, len(data), size)]


class TestGzip:
    def test_a_gzipped_body_is_inflated_as_it_arrives_and_charged_what_it_inflates_to(self):
        budget = budget_of(10 * MiB)
        body = json.dumps([{**record, "Value": index / 7} for index, record in enumerate(RECORDS * 200)]).encode()
        sent = gzipped(body)
        stream = Arriving(budget, packets(sent))
        with budget.reserve(CLIENT) as charge:
            assert read_body(request(stream, len(sent), headers={"Content-Encoding": "gzip"}), 8 * MiB, charge) == body
            assert budget.held == len(body)
        assert len(stream.reads) > 10  # as it arrived, not once whole
        assert all(held < received * 20 for received, held in stream.reads[1:])

    @pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
    def test_a_bomb_is_413_at_the_limit_never_inflated_past_it(self, chunked):
        budget = budget_of(8 * MiB + 1)  # a byte more held than the limit allows would be a 503
        stream = Arriving(budget, packets(BOMB))
        with pytest.raises(falcon.HTTPContentTooLarge) as refused:
            with budget.reserve(CLIENT) as charge:
                read_body(request(stream, len(BOMB), chunked, headers={"Content-Encoding": "gzip"}), 8 * MiB, charge)
        assert refused.value.description == "request body is larger than 8388608 bytes once inflated"
        assert stream.received < len(BOMB) / 4  # the rest never read
        assert budget.held == 0

    @pytest.mark.parametrize("members", [
        [b"[1,", b"2]"], [b" " * READ_BLOCK, b"[]"], [b"[" + b" " * (2 * READ_BLOCK - 2) + b"]"]],
        ids=["two-members", "a-member-of-a-whole-read-block", "whole-read-blocks"])
    @pytest.mark.parametrize("packet", [1500, 1 * MiB], ids=["in-packets", "at-once"])
    def test_members_one_after_another_are_one_body(self, members, packet):
        sent = b"".join(gzipped(member) for member in members)
        budget = budget_of(1 * MiB)
        assert read_whole(budget, Arriving(budget, packets(sent, packet)), len(sent),
                          headers={"Content-Encoding": "x-gzip"}) == b"".join(members)

    @pytest.mark.parametrize("sent, message", [
        (b"[1, 2]", "request body is not valid gzip: Error -3 while decompressing data: incorrect header check"),
        (gzipped(b"[1, 2]")[:-4], "request body ends inside its gzip stream"),
        (gzipped(b"[1, 2]") + b"trailing", "request body is not valid gzip: Error -3 while decompressing data: "
                                           "incorrect header check"),
        (b"", "request body ends inside its gzip stream"),
    ], ids=["not-gzip", "cut", "trailing-bytes", "empty"])
    def test_what_is_not_a_whole_gzip_stream_is_400(self, sent, message):
        budget = budget_of(1 * MiB)
        with pytest.raises(falcon.HTTPBadRequest) as refused:
            read_whole(budget, Arriving(budget, [sent] if sent else []), len(sent),
                       headers={"Content-Encoding": "gzip"})
        assert refused.value.description == message
        assert budget.held == 0


def post(client, body, encoding, status, content_type="application/json"):
    return client.post("/api/v1/growth", body, headers={"Content-Encoding": encoding}, content_type=content_type,
                       status=status)


class TestContentEncoding:
    def test_a_gzipped_bulk_post_is_loaded(self, client, store):
        post(client, gzipped(json.dumps(RECORDS).encode()), "gzip", 202)
        csv = "Country,Indicator,Value,Year\n" + "".join(f"C,I,{year}.5,{year}\n" for year in range(20))
        post(client, gzipped(csv.encode()), "GZIP", 202, content_type="text/csv")
        assert store.wait_idle(WAIT_SECONDS)
        assert store.size() == len(RECORDS) + 20

    def test_a_gzipped_put_is_stored(self, client, store):
        response = client.put("/api/v1/growth/A/B/2002", gzipped(b'{"value": 2.5}'),
                              headers={"Content-Encoding": "gzip"}, content_type="application/json", status=201)
        assert response.json["Value"] == 2.5

    @pytest.mark.parametrize("encoding", ["br", "deflate", "compress", "zstd", "gzip, gzip", "gzip;q=1"])
    def test_any_other_encoding_is_415_saying_what_is_decoded_and_changes_nothing(self, client, store, encoding):
        body = zlib.compress(json.dumps(RECORDS).encode())
        response = post(client, body, encoding, 415)
        assert response.json == {"msg": f"Content-Encoding {encoding!r} is not decoded here: send gzip, or no "
                                        f"Content-Encoding"}
        assert response.headers["Accept-Encoding"] == "gzip"
        response = client.put("/api/v1/growth/A/B/2002", b'{"value": 1}', headers={"Content-Encoding": encoding},
                              content_type="application/json", status=415)
        assert store.bulk_status().jobs_accepted == 0
        assert store.size() == 0

    def test_identity_is_the_body_as_it_is(self, client):
        post(client, json.dumps(RECORDS).encode(), "identity", 202)

    def test_a_put_inflating_past_what_its_record_can_be_is_413(self, client, store):
        body = gzipped(b'{"value": 1' + b" " * (64 * KiB) + b"}")
        response = client.put("/api/v1/growth/A/B/2002", body, headers={"Content-Encoding": "gzip"},
                              content_type="application/json", status=413)
        assert response.json == {"msg": "request body is larger than 1030 bytes once inflated"}
        assert store.size() == 0
