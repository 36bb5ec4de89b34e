"""The fuzz of tests/fuzz/test_openapi.py again, on the Redis store (tests/live/conftest.py's ``store_kind``)."""

from tests.fuzz.test_openapi import *  # noqa: F403
