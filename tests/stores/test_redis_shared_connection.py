"""The connection every request greenlet of a worker shares: in-process against a fake Redis (replies to
their callers in order, a lost connection, the timeout, the bound on waiting commands, a connection Redis
closed while idle), then on a real Redis (round trips shared, the bulk pool apart)."""

import time

import gevent
import pytest
import redis

from growth_gevent.stores.redis.shared_connection import SharedConnection
from growth_gevent.testing import wait_for
from tests.helpers.fake_redis import Error
from tests.helpers.redis_support import TIMEOUT, in_greenlets

LOST = (redis.ConnectionError, redis.TimeoutError, redis.ResponseError)
HANG_TIMEOUT = 0.08  # shorter than TIMEOUT: the fake is in this process, and the test waits it out


@pytest.fixture
def shared(fake):
    shared = SharedConnection(fake.connect, TIMEOUT)
    yield shared
    shared.close()


def calls(shared, commands):
    """Each of ``commands`` from a greenlet of its own, all at once: each reply, or the error raised."""
    pending = iter(commands)
    return in_greenlets(len(commands), lambda: shared.call(*next(pending)), errors=LOST)


def test_concurrent_callers_share_one_connection_and_each_gets_its_own_reply(fake, shared):
    assert calls(shared, [("ECHO", str(n)) for n in range(50)]) == [str(n).encode() for n in range(50)]
    assert fake.connections == 1


def test_an_error_reply_is_raised_in_its_caller_only(fake, shared):
    first, refused, last = calls(shared, [("ECHO", "a"), ("NOPE",), ("ECHO", "b")])
    assert (first, last) == (b"a", b"b")
    assert isinstance(refused, redis.ResponseError) and "unknown command 'NOPE'" in str(refused)
    assert fake.connections == 1  # an error reply is an answer: the connection stays


def test_a_lost_connection_fails_every_caller_waiting_and_the_next_call_connects_again(fake, shared):
    assert shared.call("PING") == b"PONG"
    fake.hang()
    waiting = [gevent.spawn(shared.call, "ECHO", str(n)) for n in range(5)]
    wait_for(lambda: gevent.sleep(0.001) or len(fake.commands) == 6)
    fake.cut()
    fake.resume()
    gevent.joinall(waiting)
    assert all(isinstance(caller.exception, redis.ConnectionError) for caller in waiting)
    assert all("connection to Redis lost" in str(caller.exception) for caller in waiting)
    assert shared.call("ECHO", "again") == b"again"
    assert fake.connections == 2


def test_a_command_unanswered_for_the_timeout_fails_every_caller_waiting(fake):
    shared = SharedConnection(fake.connect, HANG_TIMEOUT)
    try:
        assert shared.call("PING") == b"PONG"
        fake.hang()
        started = time.monotonic()
        outcomes = calls(shared, [("PING",)] * 3)
        waited = time.monotonic() - started
        assert all(isinstance(outcome, redis.TimeoutError) for outcome in outcomes), outcomes
        assert HANG_TIMEOUT <= waited < HANG_TIMEOUT * 4  # checked every quarter of the timeout
        fake.resume()
        assert shared.call("PING") == b"PONG"
        assert fake.connections == 2  # the connection that hung is not used again
    finally:
        shared.close()


def test_past_the_bound_of_waiting_commands_a_call_is_refused_at_once(fake):
    shared = SharedConnection(fake.connect, TIMEOUT, max_waiting=3)
    try:
        assert shared.call("PING") == b"PONG"  # connected
        outcomes = calls(shared, [("ECHO", str(n)) for n in range(5)])
        assert outcomes[:3] == [b"0", b"1", b"2"]  # served in the order they came
        assert all("3 commands are already waiting for Redis" in str(outcome) for outcome in outcomes[3:])
        assert len(fake.commands) == 4  # the refused were never sent
    finally:
        shared.close()


def test_a_connection_that_redis_closed_while_idle_is_replaced_before_a_command_is_sent(fake, shared):
    assert shared.call("PING") == b"PONG"
    fake.cut()
    assert shared.call("ECHO", "once") == b"once"  # without yielding first: the reader has not seen the end
    assert fake.commands == [(b"PING",), (b"ECHO", b"once")]
    assert fake.connections == 2


def test_a_refusal_that_redis_sends_unasked_closes_the_connection(fake, shared):
    assert shared.call("PING") == b"PONG"
    fake.push(Error("ERR max number of clients reached"))
    with pytest.raises(redis.ConnectionError, match="max number of clients reached"):
        shared.call("PING")
    assert shared.call("ECHO", "next") == b"next"
    assert fake.connections == 2


def test_callers_arriving_while_a_connection_is_made_wait_for_that_attempt(fake, shared):
    assert calls(shared, [("PING",)] * 10) == [b"PONG"] * 10
    assert fake.connections == 1


def test_a_connection_that_cannot_be_made_fails_the_call():
    def refuse():
        raise ConnectionRefusedError("nothing listens")

    refusing = SharedConnection(refuse, TIMEOUT)
    with pytest.raises(redis.ConnectionError, match="cannot connect to Redis: nothing listens"):
        refusing.call("PING")




def test_a_command_queued_as_the_connection_closes_fails_in_its_caller_and_nowhere_else(fake, shared):
    assert shared.call("PING") == b"PONG"
    link = shared._link
    caller = gevent.spawn(shared.call, "ECHO", "a")
    gevent.sleep(0)  # the caller queues its command and wakes the writer, which runs after what comes next
    shared.disconnect("closed meanwhile")
    gevent.joinall([caller, *link._greenlets], timeout=TIMEOUT)
    assert isinstance(caller.exception, redis.ConnectionError) and "closed meanwhile" in str(caller.exception)
    assert [greenlet.exception for greenlet in link._greenlets if not greenlet.successful()] == []
