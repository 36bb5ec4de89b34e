"""Markers by folder, serial tests alone under pytest-xdist (tests/serial.py), and the fixtures of the
in-process tests (on the in-memory store).

Tests that start a process (a server, redis-server, k6, locust, docker, a command line of ours, pip) live
under tests/live/ and are marked ``live``; tests/live/conftest.py holds the fixtures that start processes,
and its ``store_kind`` is "redis". The fuzz lives under tests/fuzz/ and is marked ``fuzz``. A module under
tests/live/ that imports another module's tests (``from tests.test_app import *``) runs those that take a
store again, on Redis; its other imported tests ran where they are defined and are left out.
"""

import gc
import json
import pathlib

import pytest
import webtest

from growth_gevent.api.app import create_app
from growth_gevent.config import Config

from fake_redis import FakeRedis
from serial import pytest_runtest_protocol, serial_first  # noqa: F401 (a hook of this conftest's)
from support import SAMPLE, make_store

HERE = pathlib.Path(__file__).parent
FOLDER_MARKS = {"live": pytest.mark.live, "fuzz": pytest.mark.fuzz}  # tests/live/fuzz/ has both


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(config, items):
    """Each test gets the marker of every folder of FOLDER_MARKS it is under; imported tests not on a store go;
    under pytest-xdist, serial tests first."""
    left_out = []
    for item in items:
        for folder in item.path.relative_to(HERE).parts[:-1]:
            if folder in FOLDER_MARKS:
                item.add_marker(FOLDER_MARKS[folder])
        if imported(item) and "store_kind" not in item.fixturenames:
            left_out.append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]
    serial_first(config, items)


def pytest_collection_finish(session):
    """What the imports and the collection made lives to the end of the run: frozen, it is not walked again
    by each full collection (half of the fast loop's time in the collector, ~0.15 s)."""
    gc.freeze()


def imported(item):
    """Whether ``item``'s test is defined in another module than the one it is collected from."""
    defined = item.cls if item.cls is not None else getattr(item, "function", None)
    return defined is not None and defined.__module__ != item.module.__name__


CLIENT_CONFIG = Config(max_body_bytes=64 * 1024)


@pytest.fixture
def config():
    return CLIENT_CONFIG


@pytest.fixture(scope="session")
def store_kind():
    """The store the contract runs on: "memory" here, "redis" under tests/live/."""
    return "memory"


@pytest.fixture
def fake():
    """A fake Redis in this process (tests/fake_redis.py)."""
    fake = FakeRedis()
    yield fake
    fake.close()


@pytest.fixture
def store(store_kind, request):
    """A fresh, empty store of ``store_kind``."""
    store = make_store(store_kind, request)
    yield store
    store.close()


class StoreOfTheTest:
    """The store of the test running now, for an app that its module's tests share; between tests, none."""

    def __init__(self):
        self.store = None

    def __getattr__(self, name):
        if self.store is None:
            raise AssertionError(f"the app was used outside a test: store.{name}")
        return getattr(self.store, name)


@pytest.fixture(scope="module")
def shared_app():
    """An app on CLIENT_CONFIG for the module's tests, each on its own fresh store. Building an app takes
    ~3 ms (falcon maps and compiles its routes), a third of an in-process test; what it keeps from test to
    test are its request counts, which tests/test_metrics.py reads from an app of its own, and its body
    budget and parse slot, which every request gives back (a test that kept one would fail those after it)."""
    store = StoreOfTheTest()
    return create_app(store, CLIENT_CONFIG), store


@pytest.fixture
def client(store, shared_app):
    app, store_of_the_test = shared_app
    store_of_the_test.store = store
    yield webtest.TestApp(app)
    store_of_the_test.store = None


@pytest.fixture
def sample_records():
    return json.loads(SAMPLE.read_text())
