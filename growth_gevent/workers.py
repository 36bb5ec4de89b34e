"""Several worker processes on one port: a small pre-fork supervisor.

The listening socket is bound before the fork, so every worker accepts on it and the kernel hands
each connection to one of them. The supervisor only forwards SIGTERM/SIGINT/SIGHUP (as SIGTERM), restarts a worker that
died, and waits for all of them to finish their graceful shutdown.
"""

import logging
import os
import signal

import gevent
from gevent.os import fork_and_watch
from gevent.queue import Queue

from .server import STOP_SIGNALS, ignore_signals, stop_on_signals

# A worker that dies at once must not be restarted in a tight loop.
RESTART_DELAY_SECONDS = 1.0
# Past the workers' own shutdown timeout, how long to wait before killing them.
KILL_GRACE_SECONDS = 5.0
# How often a worker checks that its supervisor is alive.
SUPERVISOR_CHECK_SECONDS = 1.0

log = logging.getLogger("growth_gevent")


def run_workers(count, serve_worker, listener, shutdown_timeout):
    """Fork ``count`` processes running ``serve_worker(index, stop)`` until a signal; ``stop`` is the
    worker's Event set by SIGTERM/SIGINT/SIGHUP, and serve_worker returns the worker's exit code.

    ``listener`` is the socket the workers accept on; the supervisor keeps it open to start new workers
    and closes it when stopping, so that the port refuses connections once every worker has closed it.
    Returns 0 when every worker shut down cleanly, else 1.
    """
    events = Queue()
    handlers = [gevent.signal_handler(signum, events.put, ("stop", signum, None)) for signum in STOP_SIGNALS]
    handlers += ignore_signals()
    workers = {}  # pid -> index
    restarting = set()  # indexes of workers that died, to be started again after RESTART_DELAY_SECONDS
    supervisor = os.getpid()

    def start(index):
        # A signal between the fork and the worker's own handlers would kill the worker: hold it back.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            pid = fork_and_watch(lambda watcher: events.put(("exit", watcher.pid, watcher.rstatus)), ref=True)
        except OSError as error:  # out of processes or memory, for now
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            log.error("cannot start worker %d: %s; trying again in %ss", index, error, RESTART_DELAY_SECONDS)
            restart_later(index)
            return
        if pid == 0:
            code = 1
            try:
                for handler in handlers:
                    handler.cancel()
                stop = stop_on_signals()
                signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
                gevent.spawn(_stop_when_orphaned, supervisor, stop)
                code = serve_worker(index, stop)
            except BaseException:
                log.exception("worker %d failed", index)
            finally:
                logging.shutdown()
                os._exit(code)  # never return into the supervisor's loop
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        workers[pid] = index
        log.info("worker %d started as pid %d", index, pid)

    def restart_later(index):
        restarting.add(index)
        gevent.spawn_later(RESTART_DELAY_SECONDS, events.put, ("restart", index, None))

    for index in range(count):
        start(index)
    stopping = False
    clean = True
    while workers or restarting and not stopping:
        kind, detail, status = events.get()
        if kind == "stop":
            if not stopping:
                stopping = True
                listener.close()
                log.info("stopping %d workers", len(workers))
                _signal(workers, signal.SIGTERM)
                gevent.spawn_later(shutdown_timeout + KILL_GRACE_SECONDS, _kill, workers)
        elif kind == "restart":
            restarting.discard(detail)
            if not stopping:
                start(detail)
        else:
            index = workers.pop(detail)
            code = os.waitstatus_to_exitcode(status)
            if stopping:
                clean = clean and code == 0
                log.info("worker %d exited with %d", index, code)
            else:
                log.warning("worker %d exited with %d; starting another in %ss", index, code, RESTART_DELAY_SECONDS)
                restart_later(index)
    log.info("stopped")
    return 0 if clean else 1


def _stop_when_orphaned(supervisor, stop):
    """A supervisor killed with SIGKILL cannot stop its workers: each notices, and stops gracefully."""
    while os.getppid() == supervisor:
        gevent.sleep(SUPERVISOR_CHECK_SECONDS)
    log.warning("the supervisor (pid %d) is gone: stopping", supervisor)
    stop.set()


def _kill(workers):
    if workers:
        log.warning("workers %s still running after the shutdown timeout: killed", sorted(workers))
        _signal(workers, signal.SIGKILL)


def _signal(workers, signum):
    for pid in list(workers):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:  # exited; its exit event is on the way
            pass
