"""What tests/test_export.py tests, where it takes a process: pandas reading the export and the CSV pages of a
live server on each deployment; and every test there that takes a store, again on Redis."""

# ruff: noqa: F405 (names from tests/test_export.py)

from tests.test_export import *  # noqa: F403
