"""The worker's read cache: in-process against a fake Redis and a clock of the test's (subscription,
invalidations, the staleness bound, a lost or refused connection); on a real Redis, in
tests/stores/test_redis_cache_live.py."""

import logging
import types

import gevent
import pytest

from growth_gevent.stores.redis import cache as cache_module
from growth_gevent.stores.redis.cache import INVALIDATIONS, ReadCache
from growth_gevent.testing import wait_for
from tests.helpers.fake_redis import Error, FakeRedis
from tests.helpers.redis_support import TIMEOUT

SERIES = "growth:s:BRZ/NGDP_R"
OTHER_SERIES = "growth:s:USA/NGDP_R"
BOUND = 1.0


class Reads:
    """A read from Redis that answers ``value`` and counts how often it was asked."""

    def __init__(self, value):
        self.value = value
        self.count = 0

    def __call__(self):
        self.count += 1
        return self.value


@pytest.fixture
def clock(monkeypatch):
    """The cache's clock, which only the test moves."""
    clock = types.SimpleNamespace(now=1000.0)
    monkeypatch.setattr(cache_module, "time", types.SimpleNamespace(monotonic=lambda: clock.now))
    return clock


@pytest.fixture
def cache(fake, clock):
    cache = ReadCache(fake.connect, timeout=TIMEOUT, stale_seconds=BOUND, reconnect_seconds=0.001)
    yield cache
    cache.close()


def from_cache(cache, series, reads):
    """Whether a read of ``series`` is answered without asking Redis, after yielding to the cache's greenlets."""
    gevent.sleep(0.001)
    before = reads.count
    cache.get(series, 2002, reads)
    return reads.count == before


def invalidate(fake, *keys):
    fake.push([b"message", INVALIDATIONS.encode(), [key.encode() for key in keys] if keys else None])


def test_the_cache_tracks_every_series_and_serves_a_value_read_again(fake, cache):
    reads = Reads(1.5)
    assert cache.get(SERIES, 2002, reads) == 1.5 and reads.count == 1
    wait_for(lambda: from_cache(cache, SERIES, reads))
    assert cache.get(SERIES, 2002, reads) == 1.5
    assert fake.commands[:3] == [(b"CLIENT", b"ID"), (b"CLIENT", b"TRACKING", b"on", b"REDIRECT", b"7", b"BCAST",
                                                    b"PREFIX", b"growth:s:"), (b"SUBSCRIBE", INVALIDATIONS.encode())]


def cached_series(cache, *series):
    """Each of ``series`` read once and served from the cache since; their reads."""
    reads = {name: Reads(1) for name in series}
    for name in series:
        cache.get(name, 2002, reads[name])
    for name in series:
        wait_for(lambda: from_cache(cache, name, reads[name]))  # noqa: B023 -- called before the next name
    return reads


def test_an_invalidation_drops_the_series_it_names_and_no_other(fake, cache):
    reads = cached_series(cache, SERIES, OTHER_SERIES)
    invalidate(fake, SERIES)
    wait_for(lambda: not from_cache(cache, SERIES, reads[SERIES]))
    assert from_cache(cache, OTHER_SERIES, reads[OTHER_SERIES])


def test_an_invalidation_of_every_key_empties_the_cache(fake, cache):
    reads = cached_series(cache, SERIES, OTHER_SERIES)
    invalidate(fake)  # what FLUSHALL sends
    wait_for(lambda: not from_cache(cache, SERIES, reads[SERIES]))
    assert not from_cache(cache, OTHER_SERIES, reads[OTHER_SERIES])


def test_a_value_invalidated_while_it_was_read_is_not_kept(fake, cache):
    cached_series(cache, SERIES)

    def read_as_it_changes():
        invalidate(fake, SERIES)
        wait_for(lambda: gevent.sleep(0.001) or SERIES not in cache._series)
        return 2

    cache.forget(SERIES)
    assert cache.get(SERIES, 2002, read_as_it_changes) == 2
    reads = Reads(3)
    assert cache.get(SERIES, 2002, reads) == 3 and reads.count == 1


def test_a_worker_s_own_write_drops_its_series_at_once(cache):
    reads = cached_series(cache, SERIES)[SERIES]
    before = reads.count
    cache.forget(SERIES)
    assert cache.get(SERIES, 2002, reads) == 1 and reads.count == before + 1  # without yielding


def test_a_cached_value_is_served_only_while_a_ping_sent_within_the_bound_was_answered(fake, cache, clock):
    reads = cached_series(cache, SERIES)[SERIES]
    fake.hang()  # from here no PING is answered, nor any invalidation sent
    clock.now += BOUND
    assert from_cache(cache, SERIES, reads)  # the last PING answered was sent at most BOUND ago
    clock.now += 0.001
    assert not from_cache(cache, SERIES, reads)
    fake.resume()
    wait_for(lambda: from_cache(cache, SERIES, reads))  # the PING that the late read asked for, answered


def test_a_ping_unanswered_for_the_timeout_cuts_the_connection_and_the_cache_starts_again_empty(fake, cache,
                                                                                                 clock):
    reads = cached_series(cache, SERIES)[SERIES]
    pings = fake.commands.count((b"PING",))
    fake.hang()
    clock.now += BOUND + 0.001  # a read asks for a PING, not answered
    wait_for(lambda: not from_cache(cache, SERIES, reads) and fake.commands.count((b"PING",)) == pings + 1)
    clock.now += TIMEOUT + 0.001
    cache.get(SERIES, 2002, reads)  # asks for a PING again: the one unanswered is too old
    wait_for(lambda: gevent.sleep(0.001) or fake.commands[-1] == (b"CLIENT", b"ID"))  # connecting again
    assert fake.connections == 2
    fake.resume()
    before = reads.count
    wait_for(lambda: from_cache(cache, SERIES, reads))
    assert reads.count == before + 1  # emptied when connected again: read once more


def test_a_lost_connection_empties_the_cache_which_connects_again(fake, cache, caplog):
    caplog.set_level(logging.INFO, logger="growth_gevent")
    reads = cached_series(cache, SERIES)[SERIES]
    fake.cut()
    wait_for(lambda: gevent.sleep(0.001) or fake.connections == 2)
    before = reads.count
    wait_for(lambda: from_cache(cache, SERIES, reads))
    assert reads.count == before + 1
    assert "read cache off until its connection to Redis is back" in caplog.text
    assert "read cache on again" in caplog.text


def test_a_redis_that_refuses_tracking_sends_every_read_to_redis(fake, clock, caplog):
    fake.reply = lambda command, subscribed: (Error("ERR unknown command 'CLIENT'") if command[0] == b"CLIENT"
                                              else FakeRedis.reply(fake, command, subscribed))
    cache = ReadCache(fake.connect, timeout=TIMEOUT, stale_seconds=BOUND, reconnect_seconds=0.001)
    try:
        reads = Reads(1)
        cache.get(SERIES, 2002, reads)
        wait_for(lambda: gevent.sleep(0.001) or "read cache off: Redis refused it" in caplog.text)
        assert not any(from_cache(cache, SERIES, reads) for _ in range(5))
        assert fake.connections == 1  # not asked again
    finally:
        cache.close()
