"""The worker's read cache on a real Redis (tests/stores/test_redis_cache.py has it against a fake): writes of other
workers, a worker's own, invalidations cut off, the staleness bound, the setting."""

import time

import gevent
import pytest

from growth_gevent import service
from growth_gevent.config import Config
from growth_gevent.stores.redis.cache import INVALIDATIONS
from growth_gevent.testing import open_redis_store, wait_for
from tests.helpers.redis_support import (
    KEY,
    TIMEOUT,
    WAIT_SECONDS,
    cache_record,
    open_store,
    served_from_cache,
)


@pytest.fixture
def cached(redis_server):
    """A store whose cache only invalidation can refresh (a bound far beyond the tests' deadlines),
    another store on the same Redis (another worker), and a direct client."""
    redis_server.flush()
    store = open_redis_store(redis_server.url, pool_size=2, timeout=TIMEOUT, cache_stale_seconds=3600)
    other = open_store(redis_server)
    direct = redis_server.client()
    cache_record(store, direct)
    yield store, other, direct
    store.close()
    other.close()
    direct.close()


def write_elsewhere(other, direct, write):
    {"put": lambda: other.put(KEY, 2),
     "delete": lambda: other.delete(KEY),
     "bulk": lambda: other.submit_bulk([(KEY, 2)]) and other.wait_idle(WAIT_SECONDS),
     "FLUSHALL": direct.flushall}[write]()


def cache_subscribers(direct):
    return direct.pubsub_numsub(INVALIDATIONS)[0][1]


def test_a_record_read_again_is_served_from_the_worker_cache_also_when_absent(cached):
    store, _, direct = cached
    absent = ("BRZ", "NGDP_R", 1999)
    assert store.get(absent) is None
    assert served_from_cache(store, absent, direct) and store.get(absent) is None


@pytest.mark.parametrize("write, value", [("put", 2), ("delete", None), ("bulk", 2), ("FLUSHALL", None)])
def test_a_write_by_another_worker_reaches_the_cache(cached, write, value):
    store, other, direct = cached
    write_elsewhere(other, direct, write)
    wait_for(lambda: gevent.sleep(0.001) or store.get(KEY) == value, timeout=5)


@pytest.mark.parametrize("write, value", [("put", 2), ("delete", None)])
def test_a_worker_reads_its_own_writes_at_once(cached, write, value):
    store, _, _ = cached
    if write == "put":
        store.put(KEY, 2)
    else:
        store.delete(KEY)
    assert store.get(KEY) == value  # without yielding: the invalidation from Redis is not read yet


def test_the_cache_is_emptied_when_its_invalidations_are_cut_off(cached):
    store, _, direct = cached
    direct.client_kill_filter(_type="pubsub")
    direct.hset("growth:s:BRZ/NGDP_R", 2002, 2)  # its invalidation has nowhere to go
    wait_for(lambda: gevent.sleep(0.001) or store.get(KEY) == 2, timeout=5)
    wait_for(lambda: served_from_cache(store, KEY, direct), timeout=5)  # on again once reconnected


def test_a_cached_read_misses_no_write_acknowledged_longer_ago_than_the_bound(redis_server):
    redis_server.flush()
    bound = 0.5
    store = open_redis_store(redis_server.url, pool_size=2, timeout=TIMEOUT, cache_stale_seconds=bound)
    try:
        with redis_server.client() as direct:
            cache_record(store, direct)
            direct.hset("growth:s:BRZ/NGDP_R", 2002, 2)
            acknowledged = time.monotonic()
            # From here nothing yields to the store's greenlets, so the invalidation stays unread: the cache
            # answers the old value, and once the bound has passed (the clock waited on, not the loop), the
            # new one, by the entry's age alone. No bound on how long anything took: a loaded machine only
            # makes the first read later, and the test says when it is too late to prove anything.
            first = store.get(KEY)
            if time.monotonic() - acknowledged < bound:
                assert first == 1
            while time.monotonic() - acknowledged <= bound:
                pass
            assert store.get(KEY) == 2
    finally:
        store.close()


@pytest.mark.parametrize("environ, cached", [({}, True), ({"GROWTH_REDIS_CACHE_STALE_SECONDS": "0"}, False)])
def test_growth_redis_cache_stale_seconds_0_turns_the_cache_off_so_that_every_read_asks_redis(own_redis,
                                                                                               environ, cached):
    store = service.open_store(Config.from_env({"GROWTH_STORE": own_redis.url, **environ}))
    try:
        with own_redis.client() as direct:
            store.put(KEY, 1)
            # With a cache, all but the first few of these reads are served from it.
            reads_from_cache = sum(served_from_cache(store, KEY, direct) for _ in range(20))
            assert (reads_from_cache > 0, cache_subscribers(direct)) == (cached, int(cached))
    finally:
        store.close()
