"""The Supervisor's decisions, one event at a time, with a fake fork, kill and clock."""

import signal

import gevent
import pytest

from growth_gevent.ops import workers
from growth_gevent.ops.workers import Supervisor


def exited(code):
    """A wait status for a process that exited with ``code``."""
    return code << 8


class FakeListener:
    closed = False

    def close(self):
        self.closed = True


class FakeSystem:
    """Hands out pids, records signals, and tells the time it is told."""

    def __init__(self, failing_forks=0):
        self.next_pid = 100
        self.signals = []
        self.now = 0.0
        self.failing_forks = failing_forks

    def fork(self, callback, ref=True):
        if self.failing_forks:
            self.failing_forks -= 1
            raise OSError(11, "Resource temporarily unavailable")
        self.next_pid += 1
        return self.next_pid

    def kill(self, pid, signum):
        self.signals.append((pid, signum))

    def clock(self):
        return self.now


@pytest.fixture(autouse=True)
def quick_restarts(monkeypatch):
    monkeypatch.setattr(workers, "RESTART_DELAY_SECONDS", 0.001)


def start(system, count=2, shutdown_timeout=1.0):
    listener = FakeListener()
    supervisor = Supervisor(count, None, listener, shutdown_timeout, fork=system.fork, kill=system.kill,
                            clock=system.clock)
    running = gevent.spawn(supervisor.run)
    gevent.sleep(0)
    return supervisor, listener, running


def settle(predicate):
    with gevent.Timeout(5):
        while not predicate():
            gevent.sleep(0.001)


def test_it_starts_the_workers_and_a_stop_signal_terms_each_then_exits_0():
    system = FakeSystem()
    supervisor, listener, running = start(system)
    assert sorted(supervisor.workers) == [101, 102]
    supervisor.events.put(("stop", signal.SIGTERM))
    settle(lambda: listener.closed)
    assert sorted(system.signals) == [(101, signal.SIGTERM), (102, signal.SIGTERM)]
    supervisor.events.put(("exit", 101, exited(0)))
    supervisor.events.put(("exit", 102, exited(0)))
    assert running.get(timeout=5) == 0


def test_a_worker_that_exits_uncleanly_at_stop_makes_the_exit_code_1():
    system = FakeSystem()
    supervisor, _, running = start(system, count=1)
    supervisor.events.put(("stop", signal.SIGTERM))
    supervisor.events.put(("exit", 101, exited(1)))
    assert running.get(timeout=5) == 1


def test_a_worker_that_dies_after_booting_is_replaced():
    system = FakeSystem()
    supervisor, _, running = start(system)
    system.now = workers.BOOT_SECONDS + 1
    for _ in range(workers.MAX_BOOT_FAILURES + 1):  # never given up on: each had booted
        victim = max(supervisor.workers)
        system.now += workers.BOOT_SECONDS + 1
        supervisor.events.put(("exit", victim, 9))
        settle(lambda victim=victim: victim not in supervisor.workers and len(supervisor.workers) == 2)
    assert not running.ready()
    assert system.signals == []
    running.kill()


def test_workers_that_keep_dying_as_they_start_make_it_give_up_with_exit_1():
    system = FakeSystem()
    supervisor, listener, running = start(system)
    for failure in range(workers.MAX_BOOT_FAILURES):
        victim = min(supervisor.workers)
        supervisor.events.put(("exit", victim, exited(3)))
        if failure < workers.MAX_BOOT_FAILURES - 1:
            settle(lambda victim=victim: victim not in supervisor.workers and len(supervisor.workers) == 2)
    settle(lambda: listener.closed)
    survivor, = supervisor.workers
    assert system.signals == [(survivor, signal.SIGTERM)]
    supervisor.events.put(("exit", survivor, exited(0)))
    assert running.get(timeout=5) == 1


def test_a_failed_fork_is_tried_again():
    system = FakeSystem(failing_forks=1)
    supervisor, _, running = start(system, count=1)
    settle(lambda: supervisor.workers)
    assert list(supervisor.workers) == [101]
    running.kill()


def test_a_stop_while_a_restart_is_pending_starts_no_new_worker(monkeypatch):
    monkeypatch.setattr(workers, "RESTART_DELAY_SECONDS", 60)
    system = FakeSystem()
    supervisor, _, running = start(system, count=1)
    system.now = workers.BOOT_SECONDS + 1
    supervisor.events.put(("exit", 101, 9))
    supervisor.events.put(("stop", signal.SIGTERM))
    assert running.get(timeout=5) == 0  # returned with the restart still pending: nothing more is forked
    assert system.next_pid == 101
