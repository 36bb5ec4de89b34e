"""The record resource's names and years (growth_gevent/api/resources.py), in-process: a name or a year in
another spelling that cannot address one record by URL is refused or names none; and its bodies, kept per value."""

import hashlib
import json
from urllib.parse import quote

import pytest

from growth_gevent.api.representation import RecordBodies, dumps
from growth_gevent.core.records import MAX_NAME_URL_BYTES, as_record
from tests.helpers.api import RECORD_URL
from tests.helpers.support import load, post_records


class TestNames:
    @pytest.mark.parametrize("name, message", [
        (".", "Country must not be '.' or '..'"), ("..", "Country must not be '.' or '..'"),
        ("A\tB", "Country must not contain control characters"),
    ])
    def test_a_name_that_cannot_address_one_record_is_422_in_a_post_and_a_put(self, client, name, message):
        response = post_records(client, [{"Country": name, "Indicator": "B", "Value": 1, "Year": 1}], status=422)
        assert response.json == {"msg": f"record 0: {message}"}
        response = client.put_json(f"/api/v1/growth/{quote(name, safe='')}/B/1", {"value": 1}, status=422)
        assert response.json == {"msg": message}
        assert client.get("/api/v1/growth/size").json == {"size": 0}

    def test_a_name_too_long_for_a_request_line_is_422(self, client):
        name = "A" * (MAX_NAME_URL_BYTES + 1)
        response = post_records(client, [{"Country": name, "Indicator": "B", "Value": 1, "Year": 1}], status=422)
        assert response.json == {"msg": f"record 0: Country must be at most {MAX_NAME_URL_BYTES} bytes long once "
                                        "upper-cased and percent-encoded in a URL"}

    def test_a_name_whose_upper_case_is_too_long_for_a_request_line_is_422(self, client):
        name = "ΐ" * 470  # 2,820 bytes percent-encoded, 8,460 upper-cased ('Ϊ́'): the stored name had no URL
        message = (f"Country must be at most {MAX_NAME_URL_BYTES} bytes long once upper-cased and percent-encoded "
                   "in a URL")
        response = post_records(client, [{"Country": name, "Indicator": "B", "Value": 1, "Year": 1}], status=422)
        assert response.json == {"msg": f"record 0: {message}"}
        assert client.put_json(f"/api/v1/growth/{quote(name, safe='')}/B/1", {"value": 1}, status=422).json == {
            "msg": message}
        assert client.get("/api/v1/growth/size").json == {"size": 0}

    @pytest.mark.parametrize("year", ["0001", "-0", "00", "-01", "02002"])
    def test_a_year_in_another_spelling_than_json_s_names_no_record(self, client, year):
        client.put_json(f"/api/v1/growth/A/B/{year.lstrip('-0') or '0'}", {"value": 1})
        assert client.get(f"/api/v1/growth/A/B/{year}", status=404).json == {"msg": "not found"}
        client.put_json(f"/api/v1/growth/A/B/{year}", {"value": 2}, status=404)
        client.delete(f"/api/v1/growth/A/B/{year}", status=404)
        assert client.get("/api/v1/growth/size").json == {"size": 1}

    @pytest.mark.parametrize("year", ["0", "-1", "2002", "-2002"])
    def test_canonical_years_name_records(self, client, year):
        client.put_json(f"/api/v1/growth/A/B/{year}", {"value": 1}, status=201)
        assert client.get(f"/api/v1/growth/A/B/{year}").json["Year"] == int(year)


class TestRecordBodies:
    """A record's JSON and ETag, made once per value (representation.RecordBodies)."""

    @pytest.mark.parametrize("first, then", [(1, 1.0), (0.0, -0.0), (2.5, 2.5)])
    def test_a_value_written_by_a_bulk_load_is_what_the_next_get_shows(self, client, store, first, then):
        # Equal values that JSON writes differently (1 and 1.0, 0.0 and -0.0): a body kept for an equal value
        # would be stale.
        client.put_json(RECORD_URL, {"value": first})
        before = client.get(RECORD_URL)
        load(client, store, [{"Country": "BRZ", "Indicator": "NGDP_R", "Value": then, "Year": 2002}])
        after = client.get(RECORD_URL)
        assert after.body == json.dumps({"Country": "BRZ", "Indicator": "NGDP_R", "Value": then,
                                         "Year": 2002}).replace(" ", "").encode()
        assert (after.headers["ETag"] == before.headers["ETag"]) == (repr(first) == repr(then))

    def test_at_most_limit_records_are_kept(self):
        bodies = RecordBodies(limit=2)
        for year in range(5):
            body, etag = bodies.of(("A", "B", year), 1.5)
            assert (body, etag) == (dumps(as_record(("A", "B", year), 1.5)).encode(),
                                    hashlib.blake2b(body, digest_size=10).hexdigest())
        assert len(bodies._kept) <= 2
