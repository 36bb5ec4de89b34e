"""Cursor paging on a live server, of one process and of two workers over Redis."""

import pytest

from scripts.generate_data import generate
from tests.helpers.support import two_workers_on_redis

PAGED_RECORDS = 2500


@pytest.fixture(params=["memory", "redis, 2 workers"])
def paged_server(request, servers):
    env = {} if request.param == "memory" else two_workers_on_redis(request)
    server = servers(**env)
    status, _ = server.request_json("POST", "/api/v1/growth", generate(PAGED_RECORDS, seed=7))
    assert status == 202
    server.wait_until_complete()
    return server


def test_following_next_on_a_live_server_visits_every_record_once_and_deep_offsets_are_refused(paged_server):
    everything, path = [], "/api/v1/growth?limit=1000"
    while path is not None:
        status, page = paged_server.request_json("GET", path)
        assert (status, page["total"]) == (200, PAGED_RECORDS)
        everything += page["items"]
        path = page["next"]
    keys = [(item["Country"], item["Indicator"], item["Year"]) for item in everything]
    assert len(keys) == PAGED_RECORDS and keys == sorted(set(keys))
    assert paged_server.request_json("GET", "/api/v1/growth?limit=1000&offset=10001") == (
        400, {"msg": 'offset is at most 10000; follow "next" to page further'})
