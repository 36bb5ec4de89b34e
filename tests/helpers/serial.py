"""Tests marked ``serial`` run alone under pytest-xdist; tests/conftest.py takes these hooks.

A serial test measures its own speed or memory (latencies, a duration with little margin, RSS) or loads
the machine for seconds (k6, Locust, a flood, thousands of connections, a Docker build): another test
beside it would change what it measures, or be slowed by it. Each test a worker runs, its setup and
teardown too, holds a lock of the run's, shared by its workers: a serial test exclusively, the others
shared.
"""

import contextlib
import fcntl
import pathlib

import pytest


def serial_first(config, items):
    """Under pytest-xdist, the serial tests first: the scheduler hands a worker consecutive tests, the first
    ones in one batch (a quarter of its share with ``--dist load``, half the suite with ``worksteal``), so
    one worker runs them all, one after another, and a module's fixtures (the Docker image) are made once.
    (``--dist loadgroup`` would say it, but pytest-xdist 3.8 marks a group in ``item._nodeid``, which
    pytest 9.2 no longer reads.)"""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: item.get_closest_marker("serial") is None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test's setup, call and teardown, under the run's lock when a worker of pytest-xdist runs it."""
    if not hasattr(item.config, "workerinput"):
        return (yield)
    with one_at_a_time(pathlib.Path(item.config.option.basetemp).parent,  # the run's, above each worker's
                       alone=item.get_closest_marker("serial") is not None):
        return (yield)


@contextlib.contextmanager
def one_at_a_time(folder, alone):
    """A readers-writer lock across processes on files in ``folder``; the writer is ``alone``. A writer
    holds the turnstile while it waits for the readers to leave, so that no new reader gets in before it."""
    with open(folder / "serial.turnstile", "a") as turnstile, open(folder / "serial.lock", "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        yield  # closing the files lets go of their locks
