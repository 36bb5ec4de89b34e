"""Waiting for state: poll with a deadline, never a bare sleep. ``wait_for`` waits until something holds,
``holds_for`` watches that something keeps holding, ``settled`` waits until a reading stops changing."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# wait_for's first pause; each next one is twice as long, up to its interval.
FIRST_PAUSE_SECONDS = 0.001


def wait_for(predicate: Callable[[], T | None], timeout: float = 10.0, interval: float = 0.01) -> T:
    """Poll ``predicate`` until it returns a true value, or fail after ``timeout`` seconds. The pauses
    between polls start at a millisecond and double up to ``interval``: what happens at once (a greenlet
    or a fake in this process) is seen at once, and a long wait still polls every ``interval``."""
    deadline = time.monotonic() + timeout
    pause = min(FIRST_PAUSE_SECONDS, interval)
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {predicate}")
        time.sleep(pause)  # between polls of a deadline-bounded wait
        pause = min(pause * 2, interval)


def holds_for(predicate: Callable[[], object], seconds: float, interval: float = 0.05) -> None:
    """Poll ``predicate`` for ``seconds``, failing at the first false value: a watch for what must not happen."""
    until = time.monotonic() + seconds
    while True:
        assert predicate(), f"stopped holding within {seconds}s: {predicate}"
        if time.monotonic() >= until:
            return
        time.sleep(interval)  # between polls of a deadline-bounded watch


def settled(read: Callable[[], T], quiet_seconds: float = 1.0, timeout: float = 30.0, interval: float = 0.1) -> T:
    """``read()`` once it has not changed for ``quiet_seconds``; fail if it still changes after ``timeout``."""
    last, since = read(), time.monotonic()
    deadline = since + timeout
    while time.monotonic() - since < quiet_seconds:
        assert time.monotonic() < deadline, f"still changing after {timeout} s: {last}"
        time.sleep(interval)  # between polls of a deadline-bounded wait
        now = read()
        if now != last:
            last, since = now, time.monotonic()
    return last
