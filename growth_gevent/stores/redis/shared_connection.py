"""One connection to Redis shared by every request greenlet of a worker, its commands pipelined."""

import collections
import math
import time
from collections.abc import Callable
from typing import Any

import gevent
import redis
from gevent.event import AsyncResult, Event
from gevent.hub import Waiter

from .connection import LOST, Connect, Connection, NotSent, command, unasked_reply_error

# Commands that may wait on a worker's connection; past it, requests are refused (503).
MAX_QUEUED_COMMANDS = 10_000


class NotReplicated(redis.ConnectionError):
    """A write that Redis made, but that fewer replicas than asked confirmed in time: it may be lost in a
    failover, or not; Redis cannot take it back."""

    def __init__(self, confirmed: int, replicas: int, seconds: float):
        super().__init__(f"the write was made on the primary, but {confirmed} of the {replicas} replicas required "
                         f"(GROWTH_REDIS_MIN_REPLICAS) confirmed it within {seconds:g} s: it may still be applied, "
                         "or lost if the primary fails")


class SharedConnection:
    """One connection to Redis for every request greenlet of a worker, commands pipelined.

    A command is queued; a writer greenlet sends everything queued in one write; Redis answers in order,
    and a reader greenlet hands each reply to its caller. Concurrent requests thus share round trips,
    sends and reads: a fraction of this process's CPU per command that redis-py's pool costs
    (docs/performance.md#one-pipelined-redis-connection-per-worker), and fewer wake-ups of Redis. Callers
    are served in the order they came; past ``max_waiting`` commands waiting, a command is refused at once
    rather than queued.

    A command not answered within ``timeout`` seconds (checked every quarter of it), or a connection
    lost, fails every command waiting on the connection (whether one ran is unknown, as with any lost
    reply) and closes it; the next command connects again, with ``connect()``. Callers that arrive while
    a connection is being made wait for that attempt.
    """

    def __init__(self, connect: Connect, timeout: float, max_waiting: int = MAX_QUEUED_COMMANDS,
                 replicas: int = 0, wait_seconds: float = 0.0):
        """``replicas``, ``wait_seconds``: what :meth:`write` waits for, and how long."""
        self._new_connection = connect
        self._timeout = timeout
        self._max_waiting = max_waiting
        self._replicas = replicas
        self._wait_milliseconds = max(1, round(wait_seconds * 1000))
        self._link: _Link | None = None  # the current connection's
        self._attempt: gevent.Greenlet | None = None  # making a connection: its value is a _Link or an error

    def call(self, *arguments: Any) -> Any:
        """Redis's reply to one command; a redis-py exception for an error reply or a lost connection.
        A command that was not sent, the connection being found closed, is sent on a new one."""
        return self._call(arguments)[0]

    def write(self, *arguments: Any) -> Any:
        """:meth:`call`, for a command that writes: with ``replicas``, answered only once that many
        replicas have what it wrote (WAIT); NotReplicated when they did not confirm it in time."""
        reply, link = self._call(arguments)
        if self._replicas:
            confirmed = link.confirm(self._replicas, self._wait_milliseconds)
            if confirmed < self._replicas:
                raise NotReplicated(confirmed, self._replicas, self._wait_milliseconds / 1000)
        return reply

    def _call(self, arguments: tuple[Any, ...]) -> tuple[Any, "_Link"]:
        """The reply, and the link it came on."""
        try:
            return self._send(arguments)
        except NotSent:
            return self._send(arguments)

    def _send(self, arguments: tuple[Any, ...]) -> tuple[Any, "_Link"]:
        link = self._link or self._connect()
        return link.ask(arguments, self._max_waiting), link

    def close(self) -> None:
        self.disconnect("the store is closed")

    def disconnect(self, why: str) -> None:
        """Close the connection, failing the commands waiting with ``why``; the next one connects again."""
        if self._link is not None:
            self._link.fail(redis.ConnectionError(why))

    def _connect(self) -> "_Link":
        if self._attempt is None:
            self._attempt = gevent.spawn(self._open)
        attempt = self._attempt
        outcome = attempt.get()
        if self._attempt is attempt:
            self._attempt = None
        if isinstance(outcome, BaseException):
            raise outcome
        if outcome.error is not None:  # lost already, while this greenlet waited: Redis refused it
            raise outcome.error
        return outcome

    def _open(self) -> "_Link | redis.ConnectionError":
        try:
            connection = self._new_connection()
        except (*LOST, redis.RedisError) as error:  # RedisError: AUTH or SELECT refused
            return redis.ConnectionError(f"cannot connect to Redis: {error}")
        connection.settimeout(None)  # how long a reply may take is up to call()
        self._link = _Link(connection, self._lost, self._timeout)
        return self._link

    def _lost(self, link: "_Link") -> None:
        if self._link is link:
            self._link = None


class _Link:
    """One connection of a :class:`SharedConnection`: its commands not yet written, its callers waiting
    in order."""

    def __init__(self, connection: Connection, on_lost: Callable[["_Link"], None], timeout: float):
        self._connection: Connection | None = connection  # None once closed
        self._on_lost = on_lost
        self._timeout = timeout
        self.outgoing: list[bytes] = []  # commands queued, in RESP
        # (Waiter, when queued) per command written or queued, in order.
        self.waiting: collections.deque[tuple[Waiter, float]] = collections.deque()
        self.write_wanted = Event()
        self.error: redis.RedisError | None = None  # why the connection was closed, once it is
        self._hub = gevent.get_hub()
        self._greenlets = [gevent.spawn(self._write), gevent.spawn(self._read, connection), gevent.spawn(self._watch)]
        self._next_confirmation = None  # the AsyncResult of the WAIT to send next, once there is a caller
        self._confirming = False  # a greenlet sends WAITs, one at a time

    def ask(self, arguments: tuple[Any, ...], max_waiting: float) -> Any:
        """Redis's reply to one command sent on this connection (see SharedConnection.call)."""
        if self.error is not None:
            raise self.error
        if len(self.waiting) >= max_waiting:
            raise redis.ConnectionError(f"{max_waiting} commands are already waiting for Redis")
        waiter = Waiter()
        self.outgoing.append(command(*arguments))
        self.waiting.append((waiter, time.monotonic()))
        self.write_wanted.set()
        reply = waiter.get()  # an answer, or the error that failed the connection (see _watch)
        if isinstance(reply, redis.RedisError):
            raise reply
        return reply

    def confirm(self, replicas: int, milliseconds: int) -> int:
        """How many replicas have every write answered on this connection so far: the answer of a WAIT sent
        from now on. One WAIT confirms every write answered before it is sent, so callers that arrive
        while one is in flight share the next (Redis holds a connection's later commands behind a WAIT)."""
        confirmation = self._next_confirmation
        if confirmation is None:
            confirmation = self._next_confirmation = AsyncResult()
            if not self._confirming:
                gevent.spawn(self._send_confirmations, replicas, milliseconds)
        return confirmation.get()

    def _send_confirmations(self, replicas: int, milliseconds: int) -> None:
        self._confirming = True
        try:
            while (confirmation := self._next_confirmation) is not None:
                self._next_confirmation = None
                try:
                    confirmation.set(self.ask(("WAIT", replicas, milliseconds), math.inf))
                except redis.RedisError as error:  # the connection failed: whether replicas have the writes is unknown
                    confirmation.set_exception(error)
        finally:
            self._confirming = False

    def fail(self, error: redis.RedisError) -> None:
        """Close the connection, and raise ``error`` in every caller waiting on it."""
        self._on_lost(self)
        if self._connection is None:
            return
        self.error = error
        self._connection.close()
        self._connection = None
        waiting, self.waiting = self.waiting, collections.deque()
        self.outgoing.clear()
        for waiter, _ in waiting:
            self._hub.loop.run_callback(waiter.switch, error)
        gevent.killall([greenlet for greenlet in self._greenlets if greenlet is not gevent.getcurrent()],
                       block=False)

    def _write(self) -> None:
        try:
            while True:
                self.write_wanted.wait()
                self.write_wanted.clear()
                connection = self._connection
                if connection is None:  # closed after a caller woke this greenlet, and before it ran
                    return
                batch, self.outgoing = self.outgoing, []
                # A connection with nothing in flight may have been closed by Redis (restarted, or its
                # idle timeout) before the reader could see it: then nothing is written to it.
                if len(self.waiting) == len(batch) and (error := connection.unasked()):
                    self.fail(error)
                    return
                connection.sendall(b"".join(batch))
        except LOST as error:
            self.fail(redis.ConnectionError(f"connection to Redis lost: {error}"))

    def _read(self, connection: Connection) -> None:
        try:
            while True:
                for reply in connection.receive():
                    if not self.waiting:
                        self.fail(unasked_reply_error(reply))
                        return
                    # Waiters are switched to from the hub, as gevent requires.
                    self._hub.loop.run_callback(self.waiting.popleft()[0].switch, reply)
        except LOST as error:
            self.fail(redis.ConnectionError(f"connection to Redis lost: {error}"))

    def _watch(self) -> None:
        """Fail the connection once its oldest command has waited ``timeout`` seconds for its answer: one
        check a quarter of the timeout, rather than a timer for each command."""
        while True:
            gevent.sleep(self._timeout / 4)
            if self.waiting and time.monotonic() - self.waiting[0][1] > self._timeout:
                self.fail(redis.TimeoutError(f"Redis did not answer within {self._timeout} s"))
                return
