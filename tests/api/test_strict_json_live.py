"""What tests/api/test_strict_json.py tests, where it takes a process (a server, redis-server); the names these tests
share with those in process come from tests/api/test_strict_json.py."""

import json

from growth_gevent.core.records import MAX_YEAR
from tests.helpers.api import JSON_RECORD, LONG_DIGITS, TOO_LONG, UNDERFLOW, YEAR_RANGE


def test_each_edge_is_refused_on_a_live_server_and_nothing_changes(live):
    def post(body):
        status, data = live.request("POST", "/api/v1/growth", body.encode(), {"Content-Type": "application/json"})
        return status, json.loads(data)

    record = json.dumps(JSON_RECORD)
    assert post(f'[{record[:-1]}, "Year": 2003}}]') == (400, {
        "msg": 'request body is not valid JSON for this service: an object has the key "Year" twice'})
    assert post(f"[{record.replace('1.5', '1e-400')}]") == (422, {"msg": UNDERFLOW.format("1e-400")})
    assert post(f"[{record.replace('2002', LONG_DIGITS)}]") == (422, {"msg": TOO_LONG})
    assert post(f"[{record.replace('2002', '4' * 4300)}]") == (422, {"msg": f"record 0: {YEAR_RANGE}"})
    status, document = live.request_json("PUT", f"/api/v1/growth/A/B/{MAX_YEAR + 1}", {"value": 1})
    assert (status, document) == (422, {"msg": YEAR_RANGE})
    assert live.request_json("GET", "/api/v1/growth/post/status")[1]["jobs accepted"] == 0
    assert live.request_json("GET", "/api/v1/growth/size")[1] == {"size": 0}


def test_the_widest_year_round_trips_on_a_live_server(live):
    status, _ = live.request_json("POST", "/api/v1/growth", [{**JSON_RECORD, "Year": -MAX_YEAR}])
    assert status == 202
    live.wait_until_complete()
    assert live.request_json("GET", f"/api/v1/growth/A/B/{-MAX_YEAR}") == (200, {**JSON_RECORD, "Year": -MAX_YEAR})
    assert live.request("DELETE", f"/api/v1/growth/A/B/{-MAX_YEAR}")[0] == 204
