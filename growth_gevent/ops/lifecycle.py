"""The process's lifecycle, apart from the HTTP server: serve until a stop signal, then shut down
gracefully (requests in flight, accepted bulk loads, the last snapshot) and give the exit code."""

import logging
import signal
import time
from typing import Any, Protocol

import gevent
from gevent.event import Event

from ..durability.snapshot import Snapshotter
from ..stores.base import Store

log = logging.getLogger("growth_gevent")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Signals that would kill the process by default; they mean nothing here, so they are logged and ignored.
IGNORED_SIGNALS = (signal.SIGUSR1, signal.SIGUSR2)


class Server(Protocol):
    """What the lifecycle does with the HTTP server (``http.server.GrowthServer``, a layer it may not import)."""

    address: tuple[Any, ...]  # (host, port, ...) once started

    def start(self) -> None: ...

    def drain(self, timeout: float) -> bool: ...


def stop_on_signals() -> Event:
    """An Event set by SIGTERM, SIGINT or SIGHUP; SIGUSR1 and SIGUSR2 are ignored."""
    stop = Event()
    for signum in STOP_SIGNALS:
        gevent.signal_handler(signum, stop.set)
    ignore_signals()
    return stop


def ignore_signals() -> list[Any]:
    """Log and ignore IGNORED_SIGNALS; return the handlers, which a forked worker cancels."""
    return [gevent.signal_handler(signum, log.info, "%s ignored", signal.Signals(signum).name)
            for signum in IGNORED_SIGNALS]


def serve(server: Server, store: Store, shutdown_timeout: float, snapshotter: Snapshotter | None = None,
          stop: Event | None = None) -> int:
    """Serve until ``stop`` is set (by default: SIGTERM, SIGINT or SIGHUP), then shut down gracefully;
    return the exit code.

    With a snapshotter, the last snapshot is written after requests in flight and accepted bulk
    loads are done; if it cannot be written the exit code is 1.
    """
    if stop is None:
        stop = stop_on_signals()
    server.start()
    host, port = server.address[:2]
    log.info("listening on http://%s:%d", host, port)
    if snapshotter is not None:
        snapshotter.start()
    stop.wait()

    deadline = time.monotonic() + shutdown_timeout
    if not server.drain(shutdown_timeout):
        log.warning("requests still running after %ss were stopped", shutdown_timeout)
    if not store.wait_idle(max(0.0, deadline - time.monotonic())):
        log.warning("accepted bulk loads not all applied at shutdown")
    exit_code = 0
    if snapshotter is not None:
        try:
            snapshotter.stop()
        except OSError:  # the snapshotter has logged the error and what is lost
            exit_code = 1
    store.close()
    log.info("stopped")
    return exit_code
