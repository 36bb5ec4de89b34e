"""Waiting for state: poll with a deadline, never a bare sleep."""

import time


def wait_for(predicate, timeout=10.0, interval=0.01):
    """Poll ``predicate`` until it returns a true value, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {predicate}")
        time.sleep(interval)  # between polls of a deadline-bounded wait
