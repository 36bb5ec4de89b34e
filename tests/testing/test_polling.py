"""growth_gevent/testing/polling.py: waiting until something holds, watching that it keeps holding, and
waiting until a reading settles, each bounded by its deadline."""

import itertools
import time

import pytest

from growth_gevent.testing import holds_for, polling, settled, wait_for


class UnsleptClock:
    """The helpers' clock: real time, plus every pause they asked for, added rather than slept. The
    pauses and deadlines are seen as the helpers measure them, without the test waiting them out."""

    def __init__(self):
        self.paused = 0.0

    def monotonic(self):
        return time.monotonic() + self.paused

    def sleep(self, seconds):
        self.paused += seconds


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    clock = UnsleptClock()
    monkeypatch.setattr(polling, "time", clock)
    return clock


def test_wait_for_answers_the_first_true_value_and_fails_past_its_timeout():
    calls = itertools.count()
    assert wait_for(lambda: next(calls) >= 2 and "ready", timeout=1) == "ready"
    with pytest.raises(AssertionError, match="condition not met within 0.01s"):
        wait_for(lambda: False, timeout=0.01)


def test_wait_for_polls_soon_at_first_then_every_interval(clock):
    calls = itertools.count()
    started = clock.monotonic()
    wait_for(lambda: next(calls) >= 3, interval=1)
    assert clock.monotonic() - started < 0.5  # 1 + 2 + 4 ms of pauses, not three intervals
    polls = []
    with pytest.raises(AssertionError):
        wait_for(lambda: polls.append(clock.monotonic()), timeout=0.08, interval=0.02)
    pauses = [later - earlier for earlier, later in itertools.pairwise(polls)]
    assert pauses[0] < 0.01 and max(pauses) >= 0.02  # doubled up to the interval


def test_holds_for_watches_the_whole_time_and_fails_at_the_first_false_value():
    calls = itertools.count()
    holds_for(lambda: next(calls) >= 0, 0.01, interval=0.001)
    assert next(calls) > 2  # asked again and again, not once
    calls = itertools.count()
    with pytest.raises(AssertionError, match="stopped holding within 1s"):
        holds_for(lambda: next(calls) < 3, 1, interval=0.001)
    assert next(calls) == 4  # stopped at the first false value, long before the second


def test_settled_answers_a_reading_once_it_stops_changing_and_fails_if_it_never_does():
    readings = iter([1, 2, 3])
    assert settled(lambda: next(readings, 3), quiet_seconds=0.01, interval=0.001) == 3
    changing = itertools.count()
    with pytest.raises(AssertionError, match="still changing after 0.02 s"):
        settled(lambda: next(changing), quiet_seconds=0.01, timeout=0.02, interval=0.001)
