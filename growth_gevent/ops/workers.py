"""Several worker processes on one port: a small pre-fork supervisor.

The listening socket is bound before the fork, so every worker accepts on it and the kernel hands
each connection to one of them. The supervisor only forwards SIGTERM/SIGINT/SIGHUP (as SIGTERM),
restarts a worker that died, gives up when workers keep dying as they start, and waits for all of
them to finish their graceful shutdown. It also owns the folder where the workers' metrics meet
(prometheus-client's multiprocess mode, see metrics.py), made at start and removed at the end.
"""

import logging
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Callable
from typing import Any

import gevent
from gevent.event import Event
from gevent.os import fork_and_watch
from gevent.queue import Queue
from prometheus_client.multiprocess import mark_process_dead

from .lifecycle import STOP_SIGNALS, ignore_signals, stop_on_signals
from .metrics import MULTIPROCESS_DIR_VARIABLE

# A worker that dies at once must not be restarted in a tight loop.
RESTART_DELAY_SECONDS = 1.0
# A worker that dies within this time of its start failed to boot; after this many such failures
# in a row the supervisor stops instead of restarting forever (a bad deployment, not bad luck).
BOOT_SECONDS = 10.0
MAX_BOOT_FAILURES = 3
# Past the workers' own shutdown timeout, how long to wait before killing them.
KILL_GRACE_SECONDS = 5.0
# How often a worker checks that its supervisor is alive.
SUPERVISOR_CHECK_SECONDS = 1.0

log = logging.getLogger("growth_gevent")

# A worker's work: serve_worker(index, stop), stop the Event a stop signal sets; it returns the exit code.
ServeWorker = Callable[[int, Event], int]


def run_workers(count: int, serve_worker: ServeWorker, listener: socket.socket, shutdown_timeout: float) -> int:
    """Fork ``count`` workers and supervise them until a stop signal; the exit code (see Supervisor).
    The workers find their metrics folder in the environment they inherit, where prometheus-client
    looks for it."""
    with tempfile.TemporaryDirectory(prefix="growth-metrics-") as metrics_dir:
        os.environ[MULTIPROCESS_DIR_VARIABLE] = metrics_dir
        log.info("the workers' metrics meet in %s", metrics_dir)
        try:
            return Supervisor(count, serve_worker, listener, shutdown_timeout, metrics_dir=metrics_dir).run()
        finally:
            del os.environ[MULTIPROCESS_DIR_VARIABLE]


class Supervisor:
    """Forks ``count`` processes running ``serve_worker(index, stop)`` and keeps them running.

    ``stop`` is the worker's Event set by a stop signal; serve_worker returns the worker's exit code.
    ``metrics_dir``, when given, is the workers' multiprocess metrics folder: an exited worker is marked
    dead there (its counts stay in the totals).
    ``listener`` is the socket the workers accept on; the supervisor keeps it open to start new workers
    and closes it when stopping, so that the port refuses connections once every worker has closed it.
    Each event (a stop signal, a worker's exit, a restart that is due) is one method, as in gunicorn's
    Arbiter. ``fork``, ``kill`` and ``clock`` are the operating system's unless a test fakes them.
    """

    def __init__(self, count: int, serve_worker: ServeWorker, listener: socket.socket, shutdown_timeout: float,
                 metrics_dir: str | None = None, fork: Callable[..., int] = fork_and_watch,
                 kill: Callable[[int, int], None] = os.kill, clock: Callable[[], float] = time.monotonic) -> None:
        self._count = count
        self._metrics_dir = metrics_dir
        self._serve_worker = serve_worker
        self._listener = listener
        self._shutdown_timeout = shutdown_timeout
        self._fork = fork
        self._kill = kill
        self._clock = clock
        self.events = Queue()
        self.workers: dict[int, tuple[int, float]] = {}  # pid -> (index, started at)
        self._restarting: set[int] = set()  # indexes of dead workers whose restart is scheduled
        self._boot_failures = 0
        self._stopping = False
        self._exit_code = 0
        self._handlers: list[Any] = []
        self._pid = os.getpid()

    def run(self) -> int:
        """Supervise until every worker has stopped; 0 when each shut down cleanly, else 1."""
        self._handlers = [gevent.signal_handler(signum, self.events.put, ("stop", signum))
                          for signum in STOP_SIGNALS] + ignore_signals()
        for index in range(self._count):
            self.spawn(index)
        while self.workers or self._restarting and not self._stopping:
            kind, detail, *rest = self.events.get()
            getattr(self, f"on_{kind}")(detail, *rest)
        log.info("stopped")
        return self._exit_code

    def spawn(self, index: int) -> None:
        # A signal between the fork and the worker's own handlers would kill the worker: hold it back.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            pid = self._fork(lambda watcher: self.events.put(("exit", watcher.pid, watcher.rstatus)), ref=True)
        except OSError as error:  # out of processes or memory, for now
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            log.error("cannot start worker %d: %s; trying again in %ss", index, error, RESTART_DELAY_SECONDS)
            self._restart_later(index)
            return
        if pid == 0:
            self._be_worker(index)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        self.workers[pid] = (index, self._clock())
        log.info("worker %d started as pid %d", index, pid)

    def _be_worker(self, index: int) -> None:
        code = 1
        try:
            for handler in self._handlers:
                handler.cancel()
            stop = stop_on_signals()
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            gevent.spawn(_stop_when_orphaned, self._pid, stop)
            code = self._serve_worker(index, stop)
        except BaseException:
            log.exception("worker %d failed", index)
        finally:
            if self._metrics_dir is not None and os.getppid() != self._pid:
                # The supervisor was killed and cannot remove the metrics folder: its orphans do.
                shutil.rmtree(self._metrics_dir, ignore_errors=True)
            logging.shutdown()
            os._exit(code)  # never return into the supervisor's loop

    def on_stop(self, signum: int | None) -> None:
        if self._stopping:
            return
        self._stopping = True
        self._listener.close()
        log.info("stopping %d workers", len(self.workers))
        self._signal_all(signal.SIGTERM)
        gevent.spawn_later(self._shutdown_timeout + KILL_GRACE_SECONDS, self._kill_remaining)

    def on_restart(self, index: int) -> None:
        self._restarting.discard(index)
        if not self._stopping:
            self.spawn(index)

    def on_exit(self, pid: int, status: int) -> None:
        index, started = self.workers.pop(pid)
        if self._metrics_dir is not None:
            mark_process_dead(pid, self._metrics_dir)
        code = os.waitstatus_to_exitcode(status)
        if self._stopping:
            if code:
                self._exit_code = 1
            log.info("worker %d exited with %d", index, code)
            return
        if self._clock() - started >= BOOT_SECONDS:
            self._boot_failures = 0
        else:
            self._boot_failures += 1
            if self._boot_failures >= MAX_BOOT_FAILURES:
                log.error("worker %d exited with %d within %ss of starting, %d times in a row: giving up",
                          index, code, BOOT_SECONDS, self._boot_failures)
                self._exit_code = 1
                self.on_stop(None)
                return
        log.warning("worker %d exited with %d; starting another in %ss", index, code, RESTART_DELAY_SECONDS)
        self._restart_later(index)

    def _restart_later(self, index: int) -> None:
        self._restarting.add(index)
        gevent.spawn_later(RESTART_DELAY_SECONDS, self.events.put, ("restart", index))

    def _kill_remaining(self) -> None:
        if self.workers:
            log.warning("workers %s still running after the shutdown timeout: killed", sorted(self.workers))
            self._signal_all(signal.SIGKILL)

    def _signal_all(self, signum: int) -> None:
        for pid in list(self.workers):
            try:
                self._kill(pid, signum)
            except ProcessLookupError:  # exited; its exit event is on the way
                pass


def _stop_when_orphaned(supervisor: int, stop: Event) -> None:
    """A supervisor killed with SIGKILL cannot stop its workers: each notices, and stops gracefully."""
    while os.getppid() == supervisor:
        gevent.sleep(SUPERVISOR_CHECK_SECONDS)
    log.warning("the supervisor (pid %d) is gone: stopping", supervisor)
    stop.set()
