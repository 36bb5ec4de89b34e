"""What the tests of the Redis store share: a store with short timeouts, records, a worker that dies,
calls from many greenlets, and whether a read was served from the cache."""

import json
import subprocess
import sys

import gevent

from growth_gevent.stores.base import StoreUnavailable
from growth_gevent.testing import open_redis_store, wait_for
from tests.helpers.support import ROOT

# Long enough that only a request that never returns takes it: a hang fails, a loaded machine does not.
HANG_SECONDS = 30
KEY = ("BRZ", "NGDP_R", 2002)
TIMEOUT = 0.5
WAIT_SECONDS = 10


def open_store(server, **options):
    """A store on ``server`` that gives up on Redis after TIMEOUT, with chunks of 2 records."""
    return open_redis_store(server.url, **{"pool_size": 4, "timeout": TIMEOUT, "chunk_size": 2, **options})


def series_records(country, years):
    return [((country, "B", year), year) for year in range(years)]


# A worker process that queues one job and exits, its background greenlet never run.
QUEUE_AND_EXIT = """
import sys, ujson
from growth_gevent.stores.redis import RedisStore
# Dead before its applier ran: else, when queueing took over the applier's 1 s poll (a loaded machine), the
# applier ran while the job's reply was on its way and applied a chunk of it.
RedisStore._apply_queued_jobs = lambda store: None
store = RedisStore(sys.argv[1], pool_size=1, timeout=2, chunk_size=2, queue_records=500_000, max_records=500_000,
                   cache_stale_seconds=0, verify_tls=True)
print(store.submit_bulk([(tuple(key), value) for key, value in ujson.loads(sys.argv[2])]))
"""


def queue_and_die(server, records):
    """Queue ``records`` as one job from a worker that died before applying any of it; its number."""
    queued = subprocess.run([sys.executable, "-c", QUEUE_AND_EXIT, server.url, json.dumps(records)],
                            check=True, capture_output=True, text=True, cwd=ROOT)
    return int(queued.stdout)


def unavailable(call):
    """The StoreUnavailable that ``call()`` raises, or None when it succeeds."""
    try:
        call()
    except StoreUnavailable as error:
        return error
    return None


def in_greenlets(count, call, errors=(StoreUnavailable,)):
    """``call()`` from ``count`` greenlets at once: what each returned, or the error of ``errors`` it raised."""
    def outcome():
        try:
            return call()
        except errors as error:
            return error

    greenlets = [gevent.spawn(outcome) for _ in range(count)]
    gevent.joinall(greenlets, raise_error=True)
    return [greenlet.value for greenlet in greenlets]


def hget_calls(direct):
    return direct.info("commandstats").get("cmdstat_hget", {}).get("calls", 0)


def served_from_cache(store, key, direct):
    """Whether a read of ``key`` is answered without asking Redis, after yielding to the store's greenlets."""
    gevent.sleep(0.01)
    before = hget_calls(direct)
    store.get(key)
    return hget_calls(direct) == before


def cache_record(store, direct):
    """KEY holds 1, read once and then served from the store's cache."""
    store.put(KEY, 1)
    assert store.get(KEY) == 1
    wait_for(lambda: served_from_cache(store, KEY, direct))
