import json
import pathlib

import pytest
import webtest

from growth_gevent.app import create_app
from growth_gevent.config import Config
from growth_gevent.stores.memory import MemoryStore
from growth_gevent.stores.redis import RedisStore
from redis_server import RedisServer

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample.json"
WAIT_SECONDS = 10


@pytest.fixture
def config():
    return Config(max_body_bytes=64 * 1024)


@pytest.fixture(scope="session")
def redis_server():
    server = RedisServer().start()
    yield server
    server.stop()


def make_store(kind, request):
    """A fresh, empty store of ``kind``; small chunks so that even small loads take several."""
    if kind == "memory":
        return MemoryStore(chunk_size=4)
    server = request.getfixturevalue("redis_server")
    server.flush()
    return RedisStore(server.url, pool_size=8, timeout=2, chunk_size=4)


STORES = ["memory", "redis"]


@pytest.fixture(params=STORES)
def store(request):
    """Every test of the contract runs against both stores."""
    store = make_store(request.param, request)
    yield store
    store.close()


@pytest.fixture
def client(store, config):
    return webtest.TestApp(create_app(store, config))


@pytest.fixture
def sample_records():
    return json.loads(SAMPLE.read_text())


def post_records(client, records, status=202):
    return client.post("/api/v1/growth", json.dumps(records), content_type="application/json", status=status, expect_errors=True)


def load(client, store, records):
    """POST records and wait until the background applier has applied them."""
    post_records(client, records)
    assert store.wait_idle(WAIT_SECONDS)


@pytest.fixture(params=["memory", "redis, 2 workers"])
def deployment(request):
    """The environment of a live server: tests that take it hold on one process with the in-memory
    store and on two workers over Redis."""
    if request.param == "memory":
        return {}
    return two_workers_on_redis(request)


def two_workers_on_redis(request):
    """The environment of a live server of two workers on the session's Redis, flushed."""
    redis_server = request.getfixturevalue("redis_server")
    redis_server.flush()
    return {"GROWTH_STORE": redis_server.url, "WEB_CONCURRENCY": "2"}


@pytest.fixture
def servers():
    """``servers(**env)`` starts a live server process; every one started is stopped after the test."""
    from live import LiveServer  # live imports this module
    started = []

    def start(**env):
        server = LiveServer(**env).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
