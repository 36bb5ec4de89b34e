"""What tests share besides fixtures: paths, the stores, and helpers that POST and wait."""

import contextlib
import json
import pathlib

from growth_gevent.config import Config
from growth_gevent.service import open_store
from growth_gevent.stores.memory import MemoryStore
from growth_gevent.stores.redis import RedisStore
from growth_gevent.testing import LiveServer, open_redis_store

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample.json"
WAIT_SECONDS = 10


def make_store(kind, request, **options):
    """A fresh, empty store of ``kind`` ("redis": on the session's redis-server, flushed);
    small chunks so that even small loads take several. ``options`` are what both take by the same name
    (``max_records``): settings of the one, arguments of the other."""
    if kind == "memory":
        return memory_store(bulk_chunk_records=4, **options)
    server = request.getfixturevalue("redis_server")
    server.flush()
    return open_redis_store(server.url, pool_size=8, timeout=2, chunk_size=4, **options)


def memory_store(**settings) -> MemoryStore:
    """An in-memory store made as the service makes it, from ``Config(**settings)``."""
    store = open_store(Config(**settings))
    assert isinstance(store, MemoryStore)
    return store


@contextlib.contextmanager
def applier_paused(store):
    """Bulk jobs stay queued inside: the Redis store's applier greenlet runs whenever a call waits on
    Redis (the memory store's only when the caller yields, which its calls never do)."""
    if not isinstance(store, RedisStore):
        yield
        return
    store._apply_one_chunk = lambda: False
    try:
        yield
    finally:
        del store._apply_one_chunk


def post_records(client, records, status=202):
    return client.post("/api/v1/growth", json.dumps(records), content_type="application/json", status=status,
                       expect_errors=True)


def load(client, store, records):
    """POST records and wait until the background applier has applied them."""
    post_records(client, records)
    assert store.wait_idle(WAIT_SECONDS)


def two_workers_on_redis(request):
    """The environment of a live server of two workers on the session's Redis, flushed."""
    redis_server = request.getfixturevalue("redis_server")
    redis_server.flush()
    return {"GROWTH_STORE": redis_server.url, "WEB_CONCURRENCY": "2"}


@contextlib.contextmanager
def serving_sample():
    """A live server (the in-memory store) holding data/sample.json, applied."""
    server = LiveServer().start()
    try:
        status, _ = server.request("POST", "/api/v1/growth", SAMPLE.read_bytes(), {"Content-Type": "application/json"})
        assert status == 202
        server.wait_until_complete()
        yield server
    finally:
        server.stop()
