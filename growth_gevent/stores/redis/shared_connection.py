"""One connection to Redis shared by every request greenlet of a worker, its commands pipelined."""

import collections
import time
from typing import Any

import gevent
import redis
from gevent.event import Event
from gevent.hub import Waiter

from .connection import LOST, Connect, Connection, NotSent, command, unasked_reply_error

# Commands that may wait on a worker's connection; past it, requests are refused (503).
MAX_QUEUED_COMMANDS = 10_000


class SharedConnection:
    """One connection to Redis for every request greenlet of a worker, commands pipelined.

    A command is queued; a writer greenlet sends everything queued in one write; Redis answers in order,
    and a reader greenlet hands each reply to its caller. Concurrent requests thus share round trips,
    sends and reads: a fraction of this process's CPU per command that redis-py's pool costs
    (docs/performance.md), and fewer wake-ups of Redis. Callers are served in the order they
    came; past ``max_waiting`` commands waiting, a command is refused at once rather than queued.

    A command not answered within ``timeout`` seconds (checked every quarter of it), or a connection
    lost, fails every command waiting on the connection (whether one ran is unknown, as with any lost
    reply) and closes it; the next command connects again, with ``connect()``. Callers that arrive while
    a connection is being made wait for that attempt.
    """

    def __init__(self, connect: Connect, timeout: float, max_waiting: int = MAX_QUEUED_COMMANDS):
        self._new_connection = connect
        self._timeout = timeout
        self._max_waiting = max_waiting
        self._link = None  # the current connection's _Link
        self._attempt = None  # the greenlet making a connection, whose value is a _Link or an error

    def call(self, *arguments) -> Any:
        """Redis's reply to one command; a redis-py exception for an error reply or a lost connection.
        A command that was not sent, the connection being found closed, is sent on a new one."""
        try:
            return self._call(arguments)
        except NotSent:
            return self._call(arguments)

    def _call(self, arguments):
        link = self._link or self._connect()
        if len(link.waiting) >= self._max_waiting:
            raise redis.ConnectionError(f"{self._max_waiting} commands are already waiting for Redis")
        waiter = Waiter()
        link.outgoing.append(command(*arguments))
        link.waiting.append((waiter, time.monotonic()))
        link.write_wanted.set()
        reply = waiter.get()  # an answer, or the error that failed the connection (see _Link._watch)
        if isinstance(reply, redis.RedisError):
            raise reply
        return reply

    def close(self) -> None:
        if self._link is not None:
            self._link.fail(redis.ConnectionError("the store is closed"))

    def _connect(self):
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

    def _open(self):
        try:
            connection = self._new_connection()
        except (*LOST, redis.RedisError) as error:  # RedisError: AUTH or SELECT refused
            return redis.ConnectionError(f"cannot connect to Redis: {error}")
        connection.settimeout(None)  # how long a reply may take is up to call()
        self._link = _Link(connection, self._lost, self._timeout)
        return self._link

    def _lost(self, link):
        if self._link is link:
            self._link = None


class _Link:
    """One connection of a :class:`SharedConnection`: its commands not yet written, its callers waiting
    in order."""

    def __init__(self, connection: Connection, on_lost, timeout: float):
        self._connection = connection
        self._on_lost = on_lost
        self._timeout = timeout
        self.outgoing = []  # commands queued, in RESP
        self.waiting = collections.deque()  # (Waiter, when queued) per command written or queued, in order
        self.write_wanted = Event()
        self.error = None  # why the connection was closed, once it is
        self._hub = gevent.get_hub()
        self._greenlets = [gevent.spawn(self._write), gevent.spawn(self._read), gevent.spawn(self._watch)]

    def fail(self, error):
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

    def _write(self):
        try:
            while True:
                self.write_wanted.wait()
                self.write_wanted.clear()
                batch, self.outgoing = self.outgoing, []
                # A connection with nothing in flight may have been closed by Redis (restarted, or its
                # idle timeout) before the reader could see it: then nothing is written to it.
                if len(self.waiting) == len(batch) and (error := self._connection.unasked()):
                    self.fail(error)
                    return
                self._connection.sendall(b"".join(batch))
        except LOST as error:
            self.fail(redis.ConnectionError(f"connection to Redis lost: {error}"))

    def _read(self):
        try:
            while True:
                for reply in self._connection.receive():
                    if not self.waiting:
                        self.fail(unasked_reply_error(reply))
                        return
                    # Waiters are switched to from the hub, as gevent requires.
                    self._hub.loop.run_callback(self.waiting.popleft()[0].switch, reply)
        except LOST as error:
            self.fail(redis.ConnectionError(f"connection to Redis lost: {error}"))

    def _watch(self):
        """Fail the connection once its oldest command has waited ``timeout`` seconds for its answer: one
        check a quarter of the timeout, rather than a timer for each command."""
        while True:
            gevent.sleep(self._timeout / 4)
            if self.waiting and time.monotonic() - self.waiting[0][1] > self._timeout:
                self.fail(redis.TimeoutError(f"Redis did not answer within {self._timeout} s"))
                return
