"""Sharing the event loop: long work yields between slices so that requests keep being answered."""

import gevent

# Any positive sleep lets the event loop poll its sockets before the sleeper runs again; sleep(0) only
# runs greenlets that are runnable already: a client waiting on a socket then waited for the whole run
# of work, however often it slept(0) (docs/performance.md#yielding-with-a-positive-sleep;
# tests/stores/test_applier.py shows it).
_LOOP_TURN_SECONDS = 1e-6


def let_io_run() -> None:
    """Yield to the event loop for one turn, sockets included: between slices of long work."""
    gevent.sleep(_LOOP_TURN_SECONDS)
