"""The Redis store's facet tallies (issue 47): kept by every write, on every worker, so that a facet read
after a write reads no series; built once, under a lock, for a store written by an older version."""

import logging
import random

import gevent
import pytest
import redis

from growth_gevent.stores.redis import reads as redis_reads
from growth_gevent.stores.redis import scripts
from growth_gevent.stores.redis.keys import COUNTRIES, LAYOUT_VERSION, PREFIX, VERSION
from growth_gevent.testing import wait_for
from tests.helpers.redis_support import WAIT_SECONDS, open_store
from tests.helpers.store_export import churn, exported, facets_of_every_kind, loaded

BUILT = "facet tallies are built"


def as_written_before_tallies(server):
    """Make the store what a version without tallies left: its records, indexes and counts, without the
    tallies, the indicators' index or the layout's version."""
    direct = redis.Redis.from_url(server.url)
    try:
        old = [key for key in direct.scan_iter(f"{PREFIX}tally*")] + [f"{PREFIX}indicators", VERSION]
        direct.delete(*old)
        assert direct.exists(COUNTRIES)
    finally:
        direct.close()


def layout_version(server):
    direct = redis.Redis.from_url(server.url)
    try:
        return int(direct.get(VERSION) or 0)
    finally:
        direct.close()


KEYS = [(country, indicator, year) for country in "ABCD" for indicator in "WXYZ" for year in range(-3, 4)]


@pytest.fixture
def scripts_run(monkeypatch):
    """The names of the scripts run from now on, by any store of this process."""
    names = []
    run = scripts.Script.run

    def counted(script, call, keys, arguments):
        names.append(script.name)
        return run(script, call, keys, arguments)

    monkeypatch.setattr(scripts.Script, "run", counted)
    return names


def test_a_facet_read_after_a_create_or_a_removal_reads_the_tallies_not_the_series(fresh, scripts_run):
    loaded(fresh, [((f"C{n}", f"I{n % 3}", 2000 + n), n) for n in range(30)])
    assert fresh.facets("country")[0] == ("C0", 1, 2000, 2000)
    for write in (lambda: fresh.put(("C0", "I9", 1990), 1), lambda: fresh.delete(("C0", "I0", 2000)),
                  lambda: loaded(fresh, [(("C5", "I1", 1900), 1)])):
        write()
        scripts_run.clear()
        every = fresh.facets("country"), fresh.facets("indicator"), fresh.facets("country", country="C5")
        assert scripts_run == ["tallies"] * 3
        assert every == tuple(facets_of_every_kind(fresh, exported(fresh))[:2]) + (every[2],)
    assert fresh.facets("country", country="C0") == [("C0", 1, 1990, 1990)]
    assert fresh.facets("country", country="C5") == [("C5", 2, 1900, 2005)]
    assert fresh.facets("indicator")[0] == ("I0", 9, 2003, 2027)


def test_removing_the_last_record_of_a_first_or_last_year_narrows_the_range(fresh):
    loaded(fresh, [(("A", "X", year), year) for year in (1990, 1995, 2000)] + [(("A", "Y", 1990), 1)])
    fresh.delete(("A", "X", 2000))
    assert fresh.facets("country") == [("A", 3, 1990, 1995)]
    fresh.delete(("A", "X", 1990))  # A's 1990 still has Y's
    assert fresh.facets("country") == [("A", 2, 1990, 1995)]
    assert fresh.facets("indicator") == [("X", 1, 1995, 1995), ("Y", 1, 1990, 1990)]
    fresh.delete(("A", "Y", 1990))
    assert fresh.facets("country") == [("A", 1, 1995, 1995)]
    assert fresh.facets("indicator") == [("X", 1, 1995, 1995)]


def test_facets_equal_the_records_after_churn_by_two_workers(fresh, redis_server):
    other = open_store(redis_server, chunk_size=3)
    try:
        rng = random.Random(47)
        for _ in range(8):
            churn([fresh, other], KEYS, rng, 25)
            expected = facets_of_every_kind(fresh, exported(fresh))
            assert facets_of_every_kind(fresh) == expected
            assert facets_of_every_kind(other) == expected
    finally:
        other.close()


def test_a_store_written_before_tallies_has_them_built_once_under_a_lock_while_written(
        redis_server, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="growth_gevent")
    redis_server.flush()
    rng = random.Random(7)
    first = open_store(redis_server)
    loaded(first, [(key, 1) for key in KEYS if rng.random() < 0.7])
    first.close()
    as_written_before_tallies(redis_server)
    # Steps of a few series each, so that the workers' writes come between them.
    monkeypatch.setattr(redis_reads, "BUILD_BUDGET", 6)
    workers = [open_store(redis_server) for _ in range(2)]
    try:
        for worker in workers:
            worker.ping()  # start-up
        wait_for(lambda: churn(workers, KEYS, rng, 1) or layout_version(redis_server) == LAYOUT_VERSION,
                 WAIT_SECONDS)
        churn(workers, KEYS, rng, 30)
        expected = facets_of_every_kind(workers[0], exported(workers[0]))
        for worker in workers:
            assert facets_of_every_kind(worker) == expected
        assert caplog.text.count(BUILT) == 1, caplog.text
        assert "written by an older version: building its facet tallies" in caplog.text
    finally:
        for worker in workers:
            worker.close()


def test_a_store_emptied_keeps_its_tallies_from_its_next_write(fresh, redis_server):
    loaded(fresh, [(("A", "X", 1), 1)])
    redis_server.flush()  # Redis lost its data
    fresh.put(("B", "Y", 2), 1)  # a store without records has no tallies to build
    assert layout_version(redis_server) == LAYOUT_VERSION
    assert fresh.facets("country") == [("B", 1, 2, 2)]


def test_a_store_without_tallies_has_them_built_at_the_first_facet_read(fresh, redis_server):
    loaded(fresh, [(("B", "Y", 2), 1), (("B", "Y", 3), 1)])
    as_written_before_tallies(redis_server)  # Redis restarted from an older version's dump
    assert fresh.facets("country") == [("B", 2, 2, 3)]  # from the series, while the build runs
    # Yielding to the build's greenlet, which takes a few steps.
    wait_for(lambda: gevent.sleep(0.001) or layout_version(redis_server) == LAYOUT_VERSION, WAIT_SECONDS)
    fresh.delete(("B", "Y", 2))
    assert fresh.facets("country") == [("B", 1, 3, 3)]
    assert fresh.facets("indicator") == [("Y", 1, 3, 3)]


def test_a_chunk_of_more_years_of_a_name_than_a_script_writes_at_once_counts_them_all(redis_server):
    redis_server.flush()
    store = open_store(redis_server, chunk_size=5000)
    try:
        loaded(store, [(("A", "X", year), 1) for year in range(-2500, 2500)] + [(("A", "Y", 0), 1)])
        assert store.facets("country") == [("A", 5001, -2500, 2499)]
        store.delete(("A", "X", -2500))
        store.delete(("A", "X", 0))  # Y's 0 stays
        assert store.facets("country") == [("A", 4999, -2499, 2499)]
        assert store.facets("indicator") == [("X", 4998, -2499, 2499), ("Y", 1, 0, 0)]
    finally:
        store.close()
