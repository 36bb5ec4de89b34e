"""The Redis store's facet tallies do not stay wrong: records created or removed by a worker that keeps no
tallies (an older version's, in a rolling upgrade), tallies edited by hand, or a removal that would take a
tally below zero are found by the self-check, and the tallies are counted again from the series."""

import logging
import random

import gevent
import pytest
import redis

from growth_gevent.stores.redis import reads as redis_reads
from growth_gevent.stores.redis import tally_build
from growth_gevent.stores.redis.keys import LAYOUT_VERSION, PREFIX, SIZE, VERSION, YEAR_RANGES, series_key
from growth_gevent.testing import LISTENING, START_SECONDS, RedisServer, holds_for, wait_for
from tests.api.test_export_live import assert_facets_are_the_exports, churn
from tests.helpers.redis_support import WAIT_SECONDS, open_store
from tests.helpers.store_export import exported, facets_of_every_kind, loaded
from tests.helpers.support import two_workers_on_redis
from tests.stores.test_redis_tallies_live import BUILT, KEYS, layout_version

WRONG = "facet tallies were wrong"


def as_an_older_worker(server, creates=(), removes=()):
    """Create and remove records as a worker of a version before the tallies did (its put.lua and delete.lua):
    the series, their indexes, the size, the generation and the series' year range, and no tally."""
    direct = redis.Redis.from_url(server.url)
    try:
        for country, indicator, year in creates:
            if direct.hset(series_key(country, indicator), year, "1"):
                direct.hdel(YEAR_RANGES, f"{country}/{indicator}")
                direct.incr(SIZE)
                direct.incr(f"{PREFIX}generation")
                direct.zadd(f"{PREFIX}i:{country}", {indicator: 0})
                direct.zadd(f"{PREFIX}countries", {country: 0})
        for country, indicator, year in removes:
            if direct.hdel(series_key(country, indicator), year):
                direct.hdel(YEAR_RANGES, f"{country}/{indicator}")
                direct.decr(SIZE)
                direct.incr(f"{PREFIX}generation")
                if not direct.exists(series_key(country, indicator)):
                    direct.zrem(f"{PREFIX}i:{country}", indicator)
                    if not direct.exists(f"{PREFIX}i:{country}"):
                        direct.zrem(f"{PREFIX}countries", country)
    finally:
        direct.close()


def right(store, server):
    """Whether every facet of ``store`` is what its records count, and its tallies are kept again."""
    return (facets_of_every_kind(store) == facets_of_every_kind(store, exported(store))
            and layout_version(server) == LAYOUT_VERSION)


@pytest.fixture
def tallied(redis_server, caplog):
    """A store with records and their tallies, and the log at INFO."""
    caplog.set_level(logging.INFO, logger="growth_gevent")
    redis_server.flush()
    store = open_store(redis_server)
    loaded(store, [(key, 1) for key in KEYS if random.Random(str(key)).random() < 0.6])
    assert store.facets("country") == facets_of_every_kind(store, exported(store))[0]
    yield store
    store.close()


def restarted(store, redis_server):
    """The worker started again: a new store, through its start-up check."""
    store.close()
    again = open_store(redis_server)
    again.ping()
    return again


@pytest.mark.parametrize("creates, removes", [
    ([("A", "W", 9), ("NEW", "V", 1)], []),  # the counts grow
    ([], [("A", "W", 0), ("B", "X", 1)]),  # they shrink
    ([("A", "W", 9), ("NEW", "V", 1)], [("A", "W", 0), ("B", "X", 1)]),  # as many created as removed
], ids=["created", "removed", "as many created as removed"])
def test_writes_of_a_worker_that_keeps_no_tallies_are_found_at_start_up(tallied, redis_server, caplog, creates,
                                                                      removes):
    as_an_older_worker(redis_server, creates, removes)
    store = restarted(tallied, redis_server)
    try:
        wait_for(lambda: right(store, redis_server), WAIT_SECONDS)
        warnings = [record for record in caplog.records if WRONG in record.getMessage()]
        assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING, caplog.text
        assert caplog.text.count(BUILT) == 1, caplog.text
    finally:
        store.close()


def test_a_facet_read_after_such_a_write_reads_the_series_and_has_the_tallies_counted_again(tallied, redis_server):
    tallied.facets("country")
    as_an_older_worker(redis_server, [("NEW", "W", 5)], [("A", "W", 0)])
    assert tallied.facets("country") == facets_of_every_kind(tallied, exported(tallied))[0]  # at once
    wait_for(lambda: right(tallied, redis_server), WAIT_SECONDS)


def test_the_figures_are_in_the_warning(tallied, redis_server, caplog):
    as_an_older_worker(redis_server, [("NEW", "W", 5)])
    size = tallied.size()
    tallied.facets("indicator")
    wait_for(lambda: right(tallied, redis_server), WAIT_SECONDS)
    assert f"the tallies count {size - 1} records, the store holds {size}" in caplog.text


def edit_tally(server, *command):
    direct = redis.Redis.from_url(server.url)
    try:
        direct.execute_command(*command)
    finally:
        direct.close()


@pytest.mark.parametrize("edit", [
    ("HDEL", f"{PREFIX}tally:country:A", "-3"),  # A's records of year -3: none, says its tally
    ("HINCRBY", f"{PREFIX}tally:indicator:W", "records", "-100"),  # W: fewer records than it has
    ("HINCRBY", f"{PREFIX}tally:country:A", "records", "-2"),  # A: its last record gone, two years left
], ids=["a year", "a name", "a name's years"])
def test_a_removal_that_would_take_a_tally_below_zero_has_them_counted_again(redis_server, caplog, edit):
    caplog.set_level(logging.INFO, logger="growth_gevent")
    redis_server.flush()
    store = open_store(redis_server)
    try:
        loaded(store, [(("A", "W", -3), 1), (("A", "X", -3), 1), (("A", "W", 2), 1), (("B", "W", 0), 1)])
        edit_tally(redis_server, *edit)
        store.delete(("A", "W", -3))
        wait_for(lambda: right(store, redis_server), WAIT_SECONDS)
        assert store.facets("country") == [("A", 2, -3, 2), ("B", 1, 0, 0)]
        assert store.facets("indicator") == [("W", 2, 0, 2), ("X", 1, -3, -3)]
        assert WRONG in caplog.text
    finally:
        store.close()


def test_a_build_drops_the_tallies_it_finds_before_it_counts(tallied, redis_server):
    """growth:version deleted by hand (what the docs say to do to have them counted again), a tally of a name
    without records left behind."""
    edit_tally(redis_server, "HSET", f"{PREFIX}tally:country:GONE", "records", "3", "1999", "3")
    edit_tally(redis_server, "DEL", VERSION)
    store = restarted(tallied, redis_server)
    try:
        wait_for(lambda: right(store, redis_server), WAIT_SECONDS)
        with redis_server.client() as direct:
            assert not direct.exists(f"{PREFIX}tally:country:GONE")
    finally:
        store.close()


def test_two_workers_find_an_older_worker_s_writes_when_the_service_starts_again(servers, request, redis_server):
    env = two_workers_on_redis(request)
    server = servers(**env)
    server.wait_for_line(LISTENING, START_SECONDS)
    churn(server, 4)
    assert_facets_are_the_exports(server)
    server.stop()
    as_an_older_worker(redis_server, [("OLD", "W", 1990), ("A", "OLD", 1980)], [("B", "W", 1990), ("C", "X", 1991)])
    server = servers(**env)
    server.wait_for_line(LISTENING, START_SECONDS)
    wait_for(lambda: server.read_available_lines() or any(BUILT in line for line in server.lines), START_SECONDS)
    assert_facets_are_the_exports(server)
    churn(server, 5)
    assert_facets_are_the_exports(server)
    server.read_available_lines()
    assert sum(WRONG in line for line in server.lines) == 1, server.lines
    assert sum(BUILT in line for line in server.lines) == 1, server.lines


def test_tallies_found_wrong_again_soon_after_a_build_are_counted_again_only_after_a_pause(
        tallied, redis_server, monkeypatch, caplog):
    """A worker of an older version that goes on writing: the facets stay right (from the series), and Redis
    does not build the tallies back to back."""
    monkeypatch.setattr(tally_build, "REBUILD_PAUSE_SECONDS", 3600)
    as_an_older_worker(redis_server, [("NEW", "W", 5)])
    tallied.facets("country")
    wait_for(lambda: right(tallied, redis_server), WAIT_SECONDS)
    as_an_older_worker(redis_server, [("NEW", "W", 6)])
    wait_for(lambda: right_but_not_tallied(tallied, redis_server), WAIT_SECONDS)
    store = restarted(tallied, redis_server)  # its start-up waits too
    try:
        holds_for(lambda: right_but_not_tallied(store, redis_server), 2 * tally_build.BUILD_POLL_SECONDS)
        with redis_server.client() as direct:
            direct.pexpire(f"{PREFIX}tally_built", 1)  # the pause is over
        wait_for(lambda: gevent.sleep(0.001) or right(store, redis_server), WAIT_SECONDS)
        assert caplog.text.count(WRONG) == 2, caplog.text
    finally:
        store.close()


def right_but_not_tallied(store, server):
    return (facets_of_every_kind(store) == facets_of_every_kind(store, exported(store))
            and layout_version(server) == 0)


def test_a_worker_closed_mid_build_lets_another_resume_at_once(tallied, redis_server, monkeypatch):
    """The supervisor opens the store (its start-up starts the build) and closes it before it forks the
    workers: the lock it held is released, not left to lapse."""
    monkeypatch.setattr(tally_build, "BUILD_LOCK_SECONDS", 3600)
    monkeypatch.setattr(redis_reads, "BUILD_BUDGET", 6)
    edit_tally(redis_server, "DEL", VERSION)
    first = restarted(tallied, redis_server)
    wait_for(lambda: gevent.sleep(0.001) or building(redis_server), WAIT_SECONDS)
    second = restarted(first, redis_server)
    try:
        wait_for(lambda: right(second, redis_server), WAIT_SECONDS)
    finally:
        second.close()


def building(server):
    with server.client() as direct:
        return direct.hget(f"{PREFIX}tally_build", "phase") == b"count"


def test_a_redis_killed_mid_build_and_started_again_from_its_log_has_the_tallies_built_right(monkeypatch):
    """A crash of Redis between two steps of the build (kill -9; Redis's append-only log fsynced at every
    write): the builder waits for it, and resumes where the log left the cursor, counting nothing twice."""
    monkeypatch.setattr(redis_reads, "BUILD_BUDGET", 6)
    monkeypatch.setattr(tally_build, "BUILD_POLL_SECONDS", 0.05)
    server = RedisServer(settings=["--appendonly", "yes", "--appendfsync", "always"]).start()
    store = open_store(server)
    try:
        loaded(store, [(key, 1) for key in KEYS])
        edit_tally(server, "DEL", VERSION)
        store = restarted(store, server)
        wait_for(lambda: gevent.sleep(0.001) or building(server), WAIT_SECONDS)
        server.stop()
        server.start()
        wait_for(lambda: gevent.sleep(0.01) or right(store, server), WAIT_SECONDS)
    finally:
        store.close()
        server.stop()
