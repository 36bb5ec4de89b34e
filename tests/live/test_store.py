"""The tests of tests/test_store.py that take a store, again on Redis (tests/live/conftest.py)."""

from tests.test_store import *  # noqa: F403
