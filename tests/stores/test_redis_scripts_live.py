"""The Lua scripts on a real Redis: bulk chunks applied, split and given up on; list queries read in
budgeted scripts; no request walks the keyspace."""

import logging

import pytest
import redis
import webtest

from growth_gevent.api.app import create_app
from growth_gevent.stores.base import COMPLETE
from growth_gevent.stores.redis import reads as reads_module
from growth_gevent.stores.redis import scripts
from growth_gevent.stores.redis.connection import open_connection
from growth_gevent.stores.redis.keys import MAX_GROUP_FIELDS
from growth_gevent.stores.redis.store import CHUNK_ATTEMPTS, FAILURE_LOG_LINES, _with_scripts
from growth_gevent.testing import open_redis_store
from tests.helpers.redis_support import (
    TIMEOUT,
    WAIT_SECONDS,
    open_store,
    queue_and_die,
    series_records,
)
from tests.helpers.support import memory_store


def test_a_chunk_longer_than_one_hset_takes_is_split_into_several(redis_server):
    redis_server.flush()
    years = MAX_GROUP_FIELDS  # records of one series: twice the fields one HSET is given
    store = open_redis_store(redis_server.url, pool_size=2, timeout=TIMEOUT, chunk_size=years * 2)
    try:
        store.submit_bulk([(("A", "B", year), year / 2) for year in range(years)])
        assert store.wait_idle(WAIT_SECONDS)
        assert store.size() == years
        assert store.series("A", "B")[-1] == (years - 1, (years - 1) / 2)
    finally:
        store.close()



def test_a_new_connection_loads_every_script_in_one_round_trip(redis_server):
    with redis_server.client() as direct:
        direct.script_flush()
        connection = open_connection(redis.connection.parse_url(redis_server.url), TIMEOUT, True)
        sent = []
        send = connection.sendall
        connection.sendall = lambda data: sent.append(data) or send(data)
        try:
            _with_scripts(lambda: connection)
        finally:
            connection.close()
        assert len(sent) == 1
        assert direct.script_exists(*(script.sha for script in scripts.EVERY)) == [True] * len(scripts.EVERY)

def test_no_request_walks_the_keyspace(redis_server, config, sample_records):
    """Every route, with every list filter: Redis counts each command, those run by scripts too."""
    redis_server.flush()
    store = open_redis_store(redis_server.url, pool_size=2, timeout=2)
    client = webtest.TestApp(create_app(store, config))
    with redis_server.client() as direct:
        direct.config_resetstat()
        client.post_json("/api/v1/growth", sample_records, status=202)
        assert store.wait_idle(WAIT_SECONDS)
        for path in ["/api/v1/growth/BRZ/NGDP_R/2002", "/api/v1/growth/BRZ/NGDP_R?from=2000&to=2005",
                     "/api/v1/growth", "/api/v1/growth?year=2002", "/api/v1/growth?from=2000&to=2003&offset=2",
                     "/api/v1/growth?country=BRZ&indicator=NGDP_R", "/api/v1/growth?indicator=NGDP_R",
                     "/api/v1/growth/size", "/api/v1/growth/post/status", "/metrics"]:
            client.get(path)
        client.put_json("/api/v1/growth/A/B/1", {"value": 1}, status=201)
        client.delete("/api/v1/growth/A/B/1", status=204)
        used = {name.removeprefix("cmdstat_") for name in direct.info("commandstats")}
    store.close()
    assert {"hget", "hset", "hdel"} <= used
    assert not used & {"keys", "scan", "hscan", "zscan", "sscan", "randomkey"}


def break_job(direct, breakage):
    """Make the chunks of job 1 (series A/B) fail to apply: a chunk that is not JSON, or the series'
    key holding another type."""
    if breakage == "malformed chunk":
        direct.lset("growth:job:1", 0, "[not JSON")
    else:
        direct.set("growth:s:A/B", "a string where a hash should be")


@pytest.mark.parametrize("breakage, error", [("malformed chunk", "Expected value"),
                                             ("key of another type", "WRONGTYPE")])
def test_a_chunk_that_keeps_failing_moves_its_job_to_the_dead_letters_and_later_jobs_proceed(
        redis_server, caplog, breakage, error):
    redis_server.flush()
    queue_and_die(redis_server, series_records("A", 4))  # job 1, two chunks
    queue_and_die(redis_server, series_records("C", 4))  # job 2, waiting behind it
    direct = redis_server.client()
    break_job(direct, breakage)
    chunks = direct.lrange("growth:job:1", 0, -1)
    store = open_store(redis_server, queue_records=8)
    try:
        with caplog.at_level(logging.WARNING, logger="growth_gevent"):
            assert store.wait_idle(WAIT_SECONDS)
        status = store.bulk_status()
        assert (status.state, status.jobs_accepted, status.jobs_applied, status.jobs_failed) == (COMPLETE, 2, 1, 1)
        assert store.size() == 4 and store.get(("C", "B", 3)) == 3
        assert direct.lrange("growth:dead", 0, -1) == [b"1"]
        assert direct.lrange("growth:dead:1", 0, -1) == chunks  # kept whole for inspection, the failing one first
        assert error in direct.hget("growth:dead:errors", "1").decode()
        assert not direct.exists("growth:job:1")
        assert store.submit_bulk(series_records("D", 8)) == 3  # the dead job's records no longer count
        # Nor its new keys against the record cap, but those of a chunk that cannot be read (until written).
        unreadable = 2 if breakage == "malformed chunk" else 0
        assert int(direct.hget("growth:bulk", "new")) - 8 == direct.hlen("growth:new:A/B") == unreadable
    finally:
        store.close()
        direct.close()
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == CHUNK_ATTEMPTS
    for attempt, line in enumerate(lines[:-1], 1):
        assert line.startswith(f"bulk job 1: a chunk failed (attempt {attempt} of {CHUNK_ATTEMPTS})") and error in line
    assert lines[-1].startswith(f"bulk job 1 given up after {CHUNK_ATTEMPTS} failed attempts") and error in lines[-1]
    assert "growth:dead:1" in lines[-1]


def test_failing_chunks_are_logged_up_to_the_limit_not_more(redis_server, caplog):
    redis_server.flush()
    jobs = FAILURE_LOG_LINES // CHUNK_ATTEMPTS + 1
    for country in range(jobs):
        queue_and_die(redis_server, series_records(f"A{country}", 1))
    with redis_server.client() as direct:
        for job in range(1, jobs + 1):
            direct.lset(f"growth:job:{job}", 0, "[not JSON")
    store = open_store(redis_server)
    try:
        with caplog.at_level(logging.WARNING, logger="growth_gevent"):
            assert store.wait_idle(WAIT_SECONDS)
        assert store.bulk_status().jobs_failed == jobs
    finally:
        store.close()
    assert len(caplog.records) == FAILURE_LOG_LINES < jobs * CHUNK_ATTEMPTS


def grid_records():
    """4 countries of 3 indicators of 6 years (one series holding only negative years), 72 records."""
    return [((country, indicator, year if indicator != "N" else -year), year * 10 + len(country))
            for country in ("AA", "B", "CC", "D") for indicator in ("M", "N", "P") for year in range(1, 7)]


QUERIES = [{}, {"offset": 5, "limit": 7}, {"offset": 70}, {"limit": 1000}, {"first": 2, "last": 4},
           {"first": 2, "last": 4, "offset": 10, "limit": 5}, {"first": -3, "last": 3}, {"first": 3, "last": 3},
           {"first": 5}, {"last": -2, "offset": 1}, {"country": "CC", "first": 2, "last": 5, "offset": 2},
           {"indicator": "P", "offset": 3, "limit": 4}, {"country": "B", "indicator": "N"}, {"country": "E"},
           {"first": 7, "last": 9}]


@pytest.mark.parametrize("budget", [1, 5, 13, 10_000])
def test_a_list_query_read_in_several_scripts_answers_as_the_memory_store(redis_server, monkeypatch, budget):
    monkeypatch.setattr(reads_module, "SCAN_BUDGET", budget)
    redis_server.flush()
    store, memory = open_store(redis_server), memory_store()
    try:
        for each in (store, memory):
            each.submit_bulk(grid_records())
            assert each.wait_idle(WAIT_SECONDS)
        for query in QUERIES:
            assert store.records(**query) == memory.records(**query), query
    finally:
        store.close()
        memory.close()


def test_a_list_query_across_the_store_examines_at_most_the_budget_per_script(fresh, redis_server, monkeypatch):
    """A script stops at the series that reaches SCAN_BUDGET: with 20, two series of 6 years and 4 each."""
    monkeypatch.setattr(reads_module, "SCAN_BUDGET", 20)
    monkeypatch.setattr(reads_module, "SCAN_SERIES_COST", 4)
    fresh.submit_bulk(grid_records())
    assert fresh.wait_idle(WAIT_SECONDS)
    with redis_server.client() as direct:
        direct.config_resetstat()
        assert fresh.records(first=1, last=6)[0] == 48
        # 12 series, 2 per script, and a last script that finds none after them.
        assert direct.info("commandstats")["cmdstat_evalsha"]["calls"] == 7


def matching(records, country=None, indicator=None, first=None, last=None):
    return [(key, value) for key, value in records
            if country in (None, key[0]) and indicator in (None, key[1])
            and (first is None or key[2] >= first) and (last is None or key[2] <= last)]


def page_after(records, after, offset=0, limit=100, **filters):
    """What ``records(after=..., ...)`` answers, from the records themselves: in paging order (Python's
    order of (str, str, int) is code point order, then year as a number)."""
    found = sorted(matching(records, **filters))
    return len(found), [record for record in found if record[0] > after][offset:offset + limit]


CURSOR_RECORDS = [((country, indicator, year), year % 7) for country in ("AA", "B", "Z", "É")
                  for indicator in ("M", "N", "É") for year in (-(10 ** 30), -10, -9, 0, 9, 10, 2002, 10 ** 30)]
CURSORS = [("", "", 0), ("AA", "M", -10), ("AA", "M", 10 ** 30), ("B", "", 0), ("B", "N", 5), ("B", "Zz", 1),
           ("Z", "É", 9), ("É", "É", 10 ** 30), ("É", "Ф", 0), ("Ф", "", 0), ("A", "M", 2002)]
CURSOR_QUERIES = [{}, {"limit": 5}, {"offset": 3, "limit": 4}, {"country": "B"}, {"indicator": "É", "limit": 7},
                  {"first": -9, "last": 10}, {"first": 9, "last": 9}, {"country": "É", "first": 0, "offset": 2}]


@pytest.mark.parametrize("budget", [1, 7, 10_000])
def test_a_page_after_a_key_starts_strictly_after_it_counts_every_match_and_keeps_the_filters(
        fresh, monkeypatch, budget):
    """Keys stored or not, before every record or after them all, names past ASCII (ordered by code point,
    whatever the server's locale), years of 31 digits; read in one script or in many."""
    monkeypatch.setattr(reads_module, "SCAN_BUDGET", budget)
    fresh.submit_bulk(CURSOR_RECORDS)
    assert fresh.wait_idle(WAIT_SECONDS)
    for after in CURSORS:
        for query in CURSOR_QUERIES:
            assert fresh.records(after=after, **query) == page_after(CURSOR_RECORDS, after, **query), (after, query)


def test_following_each_page_s_last_key_visits_every_record_once_in_order(fresh):
    fresh.submit_bulk(CURSOR_RECORDS)
    assert fresh.wait_idle(WAIT_SECONDS)
    seen, after = [], None
    while True:
        total, page = fresh.records(limit=7, after=after)
        assert total == len(CURSOR_RECORDS)
        if not page:
            break
        seen += page
        after = page[-1][0]
    assert seen == sorted(CURSOR_RECORDS)


def commands(direct):
    stats = direct.info("commandstats")
    return {name: stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in ("evalsha", "hget", "hkeys")}


def test_a_page_after_a_deep_key_costs_what_the_first_page_costs(fresh, redis_server, monkeypatch):
    """The same scripts as the first page (every series is counted for ``total`` either way), and only the
    page's own values read: none of the records before the key."""
    monkeypatch.setattr(reads_module, "SCAN_BUDGET", 20)
    fresh.submit_bulk(grid_records())
    assert fresh.wait_idle(WAIT_SECONDS)
    deep = fresh.records(offset=60, limit=1)[1][0][0]
    costs = []
    with redis_server.client() as direct:
        for after in (None, deep):
            direct.config_resetstat()
            assert len(fresh.records(limit=5, after=after)[1]) == 5
            costs.append(commands(direct))
    first, after_deep = costs
    assert after_deep["evalsha"] == first["evalsha"]
    assert after_deep["hget"] == first["hget"] == 5
    assert after_deep["hkeys"] <= first["hkeys"] + 1  # the key's own series, to find the years after it
