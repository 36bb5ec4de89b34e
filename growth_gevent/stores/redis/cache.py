"""The worker's cache of records read from Redis, kept until Redis says that their series changed."""

import collections
import logging
import math
import time
from collections.abc import Callable
from typing import Any

import gevent
import redis
from gevent.event import Event

from .connection import LOST, PING, Connect, Connection, ask
from .keys import SERIES_PREFIX

# Series the cache holds at most; past it, it starts again empty.
CACHE_SERIES = 10_000
INVALIDATIONS = "__redis__:invalidate"
# How long the cache waits before it connects again, once its connection was lost.
RECONNECT_SECONDS = 1.0

log = logging.getLogger("growth_gevent")
_UNKNOWN = object()  # a year that the cache has no answer for


class ReadCache:
    """Records read from Redis, kept in the worker until Redis says that their series changed.

    A connection of the cache's own asks Redis for an invalidation message whenever any series key is
    written, by anyone (``CLIENT TRACKING`` in broadcast mode, Redis 6 or later), and a greenlet drops
    each series named. Messages arrive within a fraction of a millisecond, but a worker busy with other
    greenlets, or a connection that stalled, could read them late; so a cached value is only served
    while Redis answered, on that connection, a PING sent at most ``stale_seconds`` earlier: every
    invalidation of a write acknowledged before that PING came before its answer. A read served from
    the cache therefore misses no write acknowledged more than ``stale_seconds`` before it; past that
    the read goes to Redis. Cached values are trusted only from the PING answered after the
    subscription, so the cache is emptied whenever the connection is made again.

    A value read from Redis is kept only if its series was not invalidated while it was read (the
    invalidation replaces the series' dict, which the read checks). The worker's own writes drop their
    series as soon as they are answered, so a worker always reads its own writes.
    """

    def __init__(self, connect: Connect, timeout: float, stale_seconds: float,
                 reconnect_seconds: float = RECONNECT_SECONDS):
        """``connect()`` makes the cache's connection; ``timeout``: how long a PING may go unanswered
        before the connection is cut and made again."""
        self._new_connection = connect
        self._timeout = timeout
        self._stale_seconds = stale_seconds
        self._ping_seconds = stale_seconds / 4
        self._reconnect_seconds = reconnect_seconds
        self._series: dict[str, dict[int, object]] = {}  # series key -> {year: value, or None for no record}
        self._fresh_as_of = -math.inf  # when the last PING answered was sent
        self._pings: collections.deque[float] = collections.deque()  # when each PING not yet answered was sent
        self._connection: Connection | None = None
        self._wanted = Event()  # a read would like a fresher PING
        self._greenlets: list[gevent.Greenlet] = []
        self._off = False  # the connection was lost, and not made again yet
        self._refused = False  # Redis refused tracking: reads go to Redis

    def get(self, series_key: str, year: int, read: Callable[[], Any]) -> Any:
        """The value of ``year`` in the series, from the cache or else ``read()`` from Redis and kept."""
        if self._refused:
            return read()
        if not self._greenlets:
            self._greenlets = [gevent.spawn(self._follow), gevent.spawn(self._ping)]
        age = time.monotonic() - self._fresh_as_of
        if age > self._ping_seconds:
            self._wanted.set()
        series = self._series.get(series_key)
        if series is not None and age <= self._stale_seconds:
            value = series.get(year, _UNKNOWN)
            if value is not _UNKNOWN:
                return value
        if series is None:
            if len(self._series) >= CACHE_SERIES:
                self._series.clear()
            series = self._series[series_key] = {}
        value = read()
        if self._series.get(series_key) is series:
            series[year] = value
        return value

    def forget(self, series_key: str) -> None:
        """The worker wrote to the series: what is cached of it is no longer true."""
        self._series.pop(series_key, None)

    def reset(self) -> None:
        """The primary changed: the new one may lack what the old one sent it last, so what is cached is
        dropped, and the connection made again (to the new one)."""
        self._disconnect()

    def close(self) -> None:
        gevent.killall(self._greenlets)
        if self._connection is not None:
            self._connection.close()

    def _follow(self) -> None:
        """The greenlet that reads invalidations and PING answers, connecting again when cut off."""
        while True:
            try:
                connection = self._subscribe()
                while True:
                    for message in connection.receive():
                        self._receive(message)
            except LOST as error:
                if not self._off:
                    log.warning("read cache off until its connection to Redis is back: %s", error)
                self._off = True
            except redis.ResponseError as error:  # tracking refused: Redis older than 6.0, or CLIENT disabled
                log.warning("read cache off: Redis refused it: %s", error)
                self._refused = True
                return
            finally:
                self._disconnect()
            gevent.sleep(self._reconnect_seconds)

    def _subscribe(self) -> Connection:
        connection = self._new_connection()
        try:
            own_id = ask(connection, "CLIENT", "ID")
            ask(connection, "CLIENT", "TRACKING", "on", "REDIRECT", own_id, "BCAST", "PREFIX", SERIES_PREFIX)
            ask(connection, "SUBSCRIBE", INVALIDATIONS)
        except BaseException:
            connection.close()
            raise
        connection.settimeout(None)  # it waits for messages as long as there are none; see _ping
        self._series.clear()
        self._pings.clear()
        self._connection = connection
        self._wanted.set()
        if self._off:
            log.info("read cache on again")
            self._off = False
        return connection

    def _receive(self, message: list[Any]) -> None:
        kind = message[0]
        if kind == b"message":
            keys = message[2]
            if keys is None:  # FLUSHALL, FLUSHDB
                self._series.clear()
                return
            for key in keys:
                self._series.pop(key.decode(errors="surrogateescape"), None)
        elif kind == b"pong":
            self._fresh_as_of = self._pings.popleft()

    def _ping(self) -> None:
        """The greenlet that sends a PING when a read finds the last answered one older than a quarter of
        the bound, one at a time; a PING unanswered for the store's timeout cuts the connection, which
        _follow then makes again."""
        while True:
            self._wanted.wait()
            self._wanted.clear()
            connection = self._connection
            if connection is None:
                continue  # _subscribe asks for a PING once connected
            if self._pings:
                if time.monotonic() - self._pings[0] > self._timeout:
                    connection.close()
                continue
            self._pings.append(time.monotonic())
            try:
                connection.sendall(PING)
            except OSError:
                pass  # _follow sees it too, and connects again

    def _disconnect(self) -> None:
        self._fresh_as_of = -math.inf
        self._series.clear()
        if self._connection is not None:
            self._connection.close()
            self._connection = None
