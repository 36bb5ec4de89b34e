"""The fixtures that start processes, for the tests under tests/live/ (marked ``live`` by tests/conftest.py;
the session's ``redis_server`` is there, for the Redis runs of the store's tests)."""

import pytest

from growth_gevent.testing import LiveServer, RedisServer

from redis_support import open_store
from support import two_workers_on_redis


@pytest.fixture
def own_redis():
    """A redis-server of the test's own, to stop, restart, pause or reconfigure."""
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture
def fresh(redis_server):
    """A Redis store (short timeouts, small chunks) on the session's Redis, flushed."""
    redis_server.flush()
    store = open_store(redis_server)
    yield store
    store.close()


@pytest.fixture(params=["memory", "redis, 2 workers"])
def deployment(request):
    """The environment of a live server: tests that take it hold on one process with the in-memory
    store and on two workers over Redis."""
    if request.param == "memory":
        return {}
    return two_workers_on_redis(request)


@pytest.fixture
def live(request, deployment, servers):
    """A live server on each deployment, for a test that needs a socket on both stores; its environment
    also holds the test's parameter (``indirect=True``) if it has one."""
    return servers(**deployment, **getattr(request, "param", {}))


@pytest.fixture
def server(request):
    """A live server process, its environment the test's parameter (``indirect=True``) if it has one;
    tests/live/test_server.py overrides it to run on each deployment."""
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
