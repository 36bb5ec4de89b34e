"""schemathesis's pytest plugin for the fuzz imported here, as in tests/fuzz/."""

from tests.fuzz.conftest import pytest_configure  # noqa: F401
