"""Paging cursors: opaque, URL-safe, and only what this service writes decodes."""

import re

import pytest
from support import REDIS_LATER, two_workers_on_redis

from growth_gevent.cursor import InvalidCursor, decode_cursor, encode_cursor
from scripts.generate_data import generate


@pytest.mark.parametrize("key", [("BRZ", "NGDP_R", 2002), ("CÔTE D’IVOIRE", "\U0001F600", -(10 ** 30)),
                                 ('QUOTE"BACKSLASH\\', "[1,2]", 0)])
def test_a_cursor_is_url_safe_and_names_its_key(key):
    cursor = encode_cursor(key)
    assert re.fullmatch(r"[A-Za-z0-9_-]+", cursor)
    assert decode_cursor(cursor) == key


@pytest.mark.parametrize("cursor", ["", "x", "!!!!", "WzFd", "e30", "bnVsbA", "WyJBIiwiQiIsIjEiXQ",
                                    "WyJBIiwiQiIsdHJ1ZV0", "WyJBIiwiQiIsMSwyXQ", "_w"])
def test_anything_else_is_invalid(cursor):
    with pytest.raises(InvalidCursor):
        decode_cursor(cursor)


# --- On a live server ------------------------------------------------------------------------------

PAGED_RECORDS = 2500


@pytest.fixture(params=["memory", pytest.param("redis, 2 workers", marks=REDIS_LATER)])
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
