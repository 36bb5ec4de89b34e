"""Markers by file name, serial tests alone under pytest-xdist (tests/helpers/serial.py), and the fixtures of
every test.

Tests that start a process (a server, redis-server, k6, locust, docker, a command line of ours, pip) live in
files named ``test_*_live.py``, beside the in-process tests of the same layer, and are marked ``live``. A test
that takes a store runs on the in-memory store, again on the memory store journaled with fsync ``always``,
and again on Redis, the session's redis-server: those two runs are marked ``live`` too, so that the fast
loop (``-m "not live"``) starts no process and waits on no fsync. The fuzz lives under
tests/fuzz/ and is marked ``fuzz``.
"""

import gc
import json
import pathlib

import pytest

from growth_gevent.config import Config
from growth_gevent.testing import LiveServer, RedisServer
from growth_gevent.testing.browser import CHROMIUM, launch_chromium
from tests.helpers.fake_redis import FakeRedis
from tests.helpers.redis_support import open_store
from tests.helpers.serial import pytest_runtest_protocol, serial_first  # noqa: F401 (a hook of this conftest's)
from tests.helpers.shared_app import SharedApp
from tests.helpers.support import SAMPLE, make_store, two_workers_on_redis

HERE = pathlib.Path(__file__).parent


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(config, items):
    """A test in a ``test_*_live.py`` file is marked ``live``, one under tests/fuzz/ ``fuzz``; under
    pytest-xdist, serial tests first."""
    for item in items:
        if item.path.name.endswith("_live.py"):
            item.add_marker(pytest.mark.live)
        if "fuzz" in item.path.relative_to(HERE).parts[:-1]:
            item.add_marker(pytest.mark.fuzz)
    serial_first(config, items)


def pytest_collection_finish(session):
    """What the imports and the collection made lives to the end of the run: frozen, it is not walked again
    by each full collection (half of the fast loop's time in the collector, ~0.15 s)."""
    gc.freeze()


CLIENT_CONFIG = Config(max_body_bytes=64 * 1024)


@pytest.fixture
def config():
    return CLIENT_CONFIG


@pytest.fixture(scope="module", params=["memory", pytest.param("journaled", marks=pytest.mark.live),
                                        pytest.param("redis", marks=pytest.mark.live)])
def store_kind(request):
    """The store a test that takes one runs on: each test once on the in-memory store; once on the memory
    store journaled in a temporary folder under GROWTH_FSYNC=always (its reads wait for durability), marked
    ``live`` because it waits on the disk: its fsyncs would more than double the fast loop; and once on
    Redis (marked ``live``: it needs the session's redis-server). Module-scoped, for the module-scoped
    fixtures that hold a store (the fuzz's); pytest runs a module's tests on one store, then on the next."""
    return request.param


@pytest.fixture(scope="session")
def redis_server():
    """A redis-server for the session: the Redis runs of the store's tests flush it (``make_store``)."""
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture
def fake():
    """A fake Redis in this process (tests/helpers/fake_redis.py)."""
    fake = FakeRedis()
    yield fake
    fake.close()


@pytest.fixture
def store(store_kind, request):
    """A fresh, empty store of ``store_kind``."""
    store = make_store(store_kind, request)
    yield store
    store.close()


@pytest.fixture(scope="module")
def shared_app():
    """An app on CLIENT_CONFIG for the module's tests, each on its own fresh store (tests/helpers/shared_app.py)."""
    return SharedApp(CLIENT_CONFIG)


@pytest.fixture
def client(store, shared_app):
    with shared_app.client(store) as client:
        yield client


@pytest.fixture
def sample_records():
    return json.loads(SAMPLE.read_text())


# The fixtures that start processes.
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
    tests/http/test_server_live.py overrides it to run on each deployment."""
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


@pytest.fixture(scope="module")
def chromium():
    """Debian's Chromium, headless, driven by Playwright (growth_gevent/testing/browser.py), for a module's
    tests; they skip, saying why, only where it is not installed."""
    from playwright.sync_api import sync_playwright  # imported where a browser is driven, not by the fast loop

    if not CHROMIUM.exists():
        pytest.skip(f"Debian's chromium is not installed at {CHROMIUM} (./scripts/test installs it: apt-get install "
                    "chromium); this machine could not install it")
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        yield browser
        browser.close()
