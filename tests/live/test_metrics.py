"""The tests of tests/test_metrics.py that take a store, again on Redis (tests/live/conftest.py)."""

from tests.test_metrics import *  # noqa: F403
