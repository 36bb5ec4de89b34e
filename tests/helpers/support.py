"""What tests share besides fixtures: paths, the stores, and helpers that POST and wait."""

import contextlib
import json
import pathlib

from gevent.event import Event

from growth_gevent.config import Config
from growth_gevent.durability.identity import Identity
from growth_gevent.durability.journaled import JournalLog
from growth_gevent.service import open_store
from growth_gevent.stores.memory import MemoryStore
from growth_gevent.stores.redis import RedisStore
from growth_gevent.testing import LiveServer, open_redis_store

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample.json"
WAIT_SECONDS = 10


def make_store(kind, request, **options):
    """A fresh, empty store of ``kind`` ("journaled": the memory store journaled in a temporary folder;
    "redis": on the session's redis-server, flushed); small chunks so that even small loads take several.
    ``options`` are what all take by the same name (``max_records``): settings of the memory stores,
    arguments of Redis's."""
    if kind == "memory":
        return memory_store(bulk_chunk_records=4, **options)
    if kind == "journaled":
        folder = request.getfixturevalue("tmp_path_factory").mktemp("journaled")
        return journaled_store(str(folder / "growth.snapshot"), bulk_chunk_records=4, **options)
    server = request.getfixturevalue("redis_server")
    server.flush()
    return open_redis_store(server.url, pool_size=8, timeout=2, chunk_size=4, **options)


def memory_store(**settings) -> MemoryStore:
    """An in-memory store made as the service makes it, from ``Config(**settings)``."""
    store = open_store(Config(**settings))
    assert isinstance(store, MemoryStore)
    return store


def journaled_store(snapshot_path: str, **settings) -> MemoryStore:
    """A memory store journaled at ``snapshot_path`` under GROWTH_FSYNC=always, made as the service makes it
    (service.build) from ``Config(**settings)``, and started on its empty folder: a read waits until the
    writes it shows are durable."""
    config = Config(snapshot_path=snapshot_path, fsync="always", **settings)
    journal_log = JournalLog(snapshot_path, config.fsync)
    store = open_store(config, journal_log)
    assert isinstance(store, MemoryStore)
    journal_log.recover(0, Identity())  # nothing to replay: the journal's first segment begins
    return store


@contextlib.contextmanager
def applier_paused(store):
    """Bulk jobs stay queued inside: the Redis store's applier greenlet runs whenever a call waits on
    Redis, the memory store's whenever the caller yields (a journaled store's writes wait for the journal)."""
    if isinstance(store, RedisStore):
        store._apply_one_chunk = lambda: False
        try:
            yield
        finally:
            del store._apply_one_chunk
        return
    applier, resumed = store._bulk, Event()

    def apply_when_resumed(job, apply=applier._apply):
        resumed.wait()
        apply(job)

    applier._apply = apply_when_resumed
    try:
        yield
    finally:
        del applier._apply
        resumed.set()


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
