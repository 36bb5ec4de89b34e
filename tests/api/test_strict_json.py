"""Request bodies at the edges of JSON (growth_gevent/api/strict_json.py): keys given twice, numbers too small
for a double, integers longer than Python reads, and years that no URL could address; in-process on both
stores (on a live server: test_strict_json_live.py)."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from growth_gevent.api.strict_json import parse_json, value_only
from growth_gevent.core.records import MAX_YEAR
from tests.helpers.api import JSON_RECORD, LONG_DIGITS, RECORD_URL, TOO_LONG, UNDERFLOW, YEAR_RANGE, records
from tests.helpers.support import load


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
        {**JSON_RECORD, "Country": "A:B{C}"},
        {**JSON_RECORD, "Note": {"x": 1, "y": [{"z": 2}]}},
        {**JSON_RECORD, "Indicator": '"quoted": {}'},
    ], ids=["colon-and-braces-in-a-name", "nested-objects", "json-in-a-name"])
    def test_what_spoils_the_fast_count_without_a_duplicate_is_accepted(self, client, store, record):
        load(client, store, [record, {**JSON_RECORD, "Year": 2003}])
        assert store.size() == 2

    def test_a_long_key_is_quoted_shortened(self):
        with pytest.raises(Exception) as refused:
            parse_json(json.dumps({"k" * 100: 1}).replace("}", ', "' + "k" * 100 + '": 2}').encode(), unique_keys=True)
        assert refused.value.description == ('request body is not valid JSON for this service: an object has the '
                                             'key "' + "k" * 39 + '..." twice')


class TestTinyNumbers:
    @pytest.mark.parametrize("literal", ["1e-400", "-2.5E-330", "0.0000001e-320", "2e-324"])
    def test_a_non_zero_number_that_underflows_is_422_in_a_post_and_a_put(self, client, store, literal):
        response = post_raw(client, json.dumps([JSON_RECORD]).replace("1.5", literal), 422)
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
        # A PUT body is at most what its record can be: names of 1,000 bytes make room for the digits.
        name = "N" * 1000
        response = client.put(f"/api/v1/growth/{name}/{name}/2002", f'{{"value": {LONG_DIGITS}}}',
                              content_type="application/json", status=422)
        assert response.json == {"msg": TOO_LONG}


class TestYears:
    @pytest.mark.parametrize("year", [MAX_YEAR + 1, -MAX_YEAR - 1, 10 ** 4299, -(10 ** 30)])
    def test_a_year_that_no_url_could_address_is_422_in_a_post(self, client, store, year):
        response = post_raw(client, json.dumps([JSON_RECORD, {**JSON_RECORD, "Year": year}]), 422)
        assert response.json == {"msg": f"record 1: {YEAR_RANGE}"}
        assert store.bulk_status().jobs_accepted == 0

    @pytest.mark.parametrize("year", [MAX_YEAR + 1, -MAX_YEAR - 1, 10 ** 3999])
    def test_and_in_a_put(self, client, store, year):
        assert put_raw(client, '{"value": 1}', 422, year=year).json == {"msg": YEAR_RANGE}
        assert store.size() == 0

    @pytest.mark.parametrize("year", [MAX_YEAR, -MAX_YEAR, 0, 20021231])
    def test_the_widest_years_are_stored_and_reached_by_their_url(self, client, store, year):
        load(client, store, [{**JSON_RECORD, "Year": year}])
        assert client.get(f"/api/v1/growth/A/B/{year}").json == {**JSON_RECORD, "Year": year}
        client.delete(f"/api/v1/growth/A/B/{year}", status=204)
        assert put_raw(client, '{"value": 1}', 201, year=year).json["Year"] == year


class TestStrictJson:
    @pytest.mark.parametrize("body, message", [
        (b'[{"Country":"A","Indicator":"B","Value":01,"Year":1}]',
         "Expecting ',' delimiter: line 1 column 42 (char 41)"),
        (b'[{"Country":"A","Indicator":"B","Value":1.,"Year":1}]',
         "Expecting ',' delimiter: line 1 column 42 (char 41)"),
        (b'[{"Country":"A\tB","Indicator":"B","Value":1,"Year":1}]',
         "Invalid control character at: line 1 column 15 (char 14)"),
        (b'[{"Country":"A","Indicator":"B","Value":-,"Year":1}]', "Expecting value: line 1 column 41 (char 40)"),
        (b"[" * 60000, "nested too deeply"),
    ])
    def test_json_that_ujson_would_accept_is_400(self, client, body, message):
        response = client.post("/api/v1/growth", body, content_type="application/json", status=400)
        assert response.json == {"msg": f"request body is not valid JSON: {message}"}

    def test_a_body_that_is_not_utf8_is_400(self, client):
        response = client.post("/api/v1/growth", '["A"]'.encode("utf-16"), content_type="application/json", status=400)
        assert response.json == {"msg": "request body is not UTF-8: invalid start byte at byte 0"}

    def test_whitespace_around_and_inside_is_fine(self, client, store):
        load(client, store, json.loads(json.dumps(records(2))))
        body = b'\n\t[ {"Country" :"A",\r\n "Indicator":"B", "Value": -0.5e-3, "Year": 7} ]\n'
        client.post("/api/v1/growth", body, content_type="application/json", status=202)
        assert store.wait_idle(10)
        assert client.get("/api/v1/growth/A/B/7").json["Value"] == -0.0005

    def test_a_put_body_is_strict_too_and_at_most_what_its_record_can_be(self, client):
        response = client.put(RECORD_URL, b'{"value": 01}', content_type="application/json", status=400)
        assert response.json["msg"].startswith("request body is not valid JSON: ")
        # BRZ, each byte written as \u00XX, NGDP_R, and a kilobyte for the rest: 1,051 bytes.
        escaped = "".join(f"\\u{ord(char):04x}" for char in "BRZ")
        record = f'{{"Country": "{escaped}", "Indicator": "NGDP_R", "Value": 1, "Year": 2002}}'.encode()
        padded = record + b" " * (1051 - len(record))
        client.put(RECORD_URL, padded, content_type="application/json", status=201)
        response = client.put(RECORD_URL, padded + b" ", content_type="application/json", status=413)
        assert response.json == {"msg": "request body is larger than 1051 bytes"}

    def test_a_put_body_naming_its_record_in_another_case_is_read_however_long(self, client):
        # 'ı' and 'ſ' upper-case to 'I' and 'S', and an encoder writes each as \u0131, \u017f: 6 bytes for one.
        country, indicator = "I" * 400, "S" * 400
        url = f"/api/v1/growth/{country}/{indicator}/1"
        body = json.dumps({"Country": "\u0131" * 400, "Indicator": "\u017f" * 400, "Value": 2, "Year": 1})
        assert len(body) > 3 * 800 + 1024
        client.put(url, body.encode(), content_type="application/json", status=201)


class TestValueOnly:
    """The PUT body read in one match (value_only): the number the full parse reads, or None to let it judge."""

    @pytest.mark.parametrize("body", [
        b'{"value": 183.26}', b'{"Value":1}', b' \r\n\t{ "value" : -0 } \n', b'{"value": -0.0}', b'{"value": 1E5}',
        b'{"value": 2.5e-3}', b'{"value": 123456789012345678}',
        b'{"value": 1e308}', b'{"value": 5e-324}', b'{"value": 0e-999}', b'{"value": 0.10000000000000000555}',
    ])
    def test_a_value_alone_is_read_as_the_full_parse_reads_it(self, body):
        value = value_only(body)
        assert value is not None
        full = parse_json(body, unique_keys=True)
        assert repr(value) == repr(full.get("value", full.get("Value")))

    @pytest.mark.parametrize("body", [
        b'{"value": 1e999}', b'{"value": -1e400}', b'{"value": 1e-400}', b'{"value": 01}', b'{"value": 1.}',
        b'{"value": .5}', b'{"value": +1}', b'{"value": NaN}', b'{"value": "1"}', b'{"value": 1, "value": 2}',
        b'{"value": 1, "Year": 2002}', b'{"VALUE": 1}', b'{"\\u0076alue": 1}', b'\xef\xbb\xbf{"value": 1}',
        b'{"value": 1}x', b'[{"value": 1}]', b'{"value": 1234567890123456789}', b'{"value": 1\x0b}', b'',
        b'{"value": 0.1000000000000000055511151231257827}',
    ])
    def test_any_other_body_is_left_to_the_full_parse(self, body):
        assert value_only(body) is None

    @pytest.mark.parametrize("body, status, says", [
        ('{"value": 1e999}', 422, "value must be a finite number"),
        ('{"value": 1e-400}', 422, "too small for a double"),
        ('{"value": 1, "value": 2}', 400, 'the key "value" twice'),
    ])
    def test_a_put_of_a_number_no_field_takes_is_refused_as_before(self, client, body, status, says):
        assert says in put_raw(client, body, status).json["msg"]
        client.get("/api/v1/growth/A/B/2002", status=404)

    @given(number=st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False)),
           field=st.sampled_from(["value", "Value"]))
    def test_any_number_is_read_as_the_full_parse_reads_it_or_left_to_it(self, number, field):
        body = json.dumps({field: number}).encode()
        value = value_only(body)
        assert value is None or repr(value) == repr(parse_json(body, unique_keys=True)[field])
