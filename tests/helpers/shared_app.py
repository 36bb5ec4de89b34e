"""One app for a module's tests, each test on its own fresh store: building an app takes ~2 ms (falcon
maps its routes, and compiles them at the first request), more than most in-process tests take.

What the app keeps from test to test are its request counts, which tests/ops/test_metrics.py reads from an
app of its own, and its body budget and parse slot, which every request gives back (a test that kept one
would fail those after it)."""

import contextlib

import webtest

from growth_gevent.api.app import create_app
from growth_gevent.config import Config


class StoreOfTheTest:
    """The store of the test running now, for an app its module's tests share; between tests, none."""

    name = "shared"  # the app's build info is read as it is built, before any test's store

    def __init__(self):
        self.store = None

    def __getattr__(self, name):
        if self.store is None:
            raise AssertionError(f"the app was used outside a test: store.{name}")
        return getattr(self.store, name)


class SharedApp:
    """An app on ``config`` that answers from whichever store a test gives ``client``."""

    def __init__(self, config: Config):
        self._store_of_the_test = StoreOfTheTest()
        self.app = create_app(self._store_of_the_test, config)

    @contextlib.contextmanager
    def client(self, store):
        """A WebTest client of the app, answering from ``store`` inside the block."""
        self._store_of_the_test.store = store
        try:
            yield webtest.TestApp(self.app)
        finally:
            self._store_of_the_test.store = None
