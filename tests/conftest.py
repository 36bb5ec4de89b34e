"""Fixtures, and the markers ``live`` and ``fuzz`` (pyproject.toml) given to the tests that need them."""

import json

import pytest
import webtest

from growth_gevent.app import create_app
from growth_gevent.config import Config
from growth_gevent.testing import LiveServer, RedisServer

from fake_redis import FakeRedis
from redis_support import open_store
from support import SAMPLE, STORES, make_store, two_workers_on_redis

# Fixtures that start a process (a server, redis-server, the data generator), directly or through
# those they use; tests that start one themselves are marked where they are written.
LIVE_FIXTURES = frozenset({"redis_server", "servers", "server", "workers", "deployment", "own_redis", "fresh",
                           "self_signed_redis", "bulk_file"})


def pytest_collection_modifyitems(items):
    """Mark ``live`` every test that uses a fixture of LIVE_FIXTURES or runs on the Redis store (its
    fixture starts the session's redis-server when first asked), so that ``-m "not live"`` starts none."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_redis = callspec is not None and "redis" in callspec.params.values()
        if on_redis or LIVE_FIXTURES.intersection(item.fixturenames):
            item.add_marker(pytest.mark.live)


@pytest.fixture
def config():
    return Config(max_body_bytes=64 * 1024)


@pytest.fixture(scope="session")
def redis_server():
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture
def own_redis():
    """A redis-server of the test's own, to stop, restart, pause or reconfigure."""
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture
def fake():
    """A fake Redis in this process (tests/fake_redis.py)."""
    fake = FakeRedis()
    yield fake
    fake.close()


@pytest.fixture
def fresh(redis_server):
    """A Redis store (short timeouts, small chunks) on the session's Redis, flushed."""
    redis_server.flush()
    store = open_store(redis_server)
    yield store
    store.close()


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


@pytest.fixture(params=["memory", "redis, 2 workers"])
def deployment(request):
    """The environment of a live server: tests that take it hold on one process with the in-memory
    store and on two workers over Redis."""
    if request.param == "memory":
        return {}
    return two_workers_on_redis(request)


@pytest.fixture
def server(request):
    """A live server process, its environment the test's parameter (``indirect=True``) if it has one;
    tests/test_server.py overrides it to run on each deployment."""
    live = LiveServer(**getattr(request, "param", {})).start()
    yield live
    live.stop()


@pytest.fixture
def servers():
    """``servers(**env)`` starts a live server process; every one started is stopped after the test."""
    started = []

    def start(**env):
        server = LiveServer(**env).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
