"""The Redis store: the memory store's contract, shared by every worker process and machine.

Key layout; every write is one Lua script, so each is atomic and the counts stay exact:

- ``growth:s:{COUNTRY}/{INDICATOR}``: hash, year -> value as its JSON text, so that it comes back with
  its type and every digit (names cannot hold a ``/``)
- ``growth:i:{COUNTRY}``: sorted set of the country's indicators (all scores 0: ordered by name)
- ``growth:countries``: sorted set of the countries that have records
- ``growth:size``: how many records there are
- ``growth:jobs``: accepted bulk jobs, oldest first; ``growth:job:{N}``: the chunks of job N not yet
  applied, each a JSON array ``[country, indicator, ["year", "value", ...], ...]``: consecutive records
  of one series are one group, written with one ``HSET``; numbers are JSON strings of their JSON text,
  since Lua's cjson would turn JSON numbers into doubles
- ``growth:remaining``: hash, job N -> its records not yet applied, while it is queued
- ``growth:bulk``: hash, the bulk status: jobs accepted, applied and failed, records applied and
  ``pending`` (accepted, not yet applied: what the queue bound counts), the latest job's counts, the
  failed attempts of the chunk at the head of the queue, and ``initial`` once initial data was queued
- ``growth:dead``: ids of the jobs given up on, oldest first; ``growth:dead:{N}``: job N's chunks not
  applied, the failing one first, kept for inspection; ``growth:dead:errors``: hash, job N -> its error

A record is one hash field, a series one hash, a country slice one sorted set and its hashes: no
request walks keys it does not need. Bulk jobs are queued whole in one script; any worker then
applies the oldest job's next chunk, one script per chunk that removes the chunk as it applies it,
so jobs are applied in order, each chunk exactly once, and a job whose worker died is finished by
another. A chunk that fails CHUNK_ATTEMPTS times (malformed, or a key of another type in the way)
moves its job to the dead letters, so that later jobs proceed.
"""

import collections
import functools
import logging
import math
import pathlib
import socket
import time

import gevent
import gevent.socket
import gevent.ssl
import hiredis
import redis
import ujson
from gevent.event import Event
from gevent.hub import Waiter
from redis._parsers import BaseParser  # redis-py's mapping of error replies to its exceptions
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..bulk import let_io_run
from ..logs import ThrottledLog
from ..config import DEFAULT_BULK_CHUNK_RECORDS, DEFAULT_BULK_QUEUE_RECORDS, DEFAULT_REDIS_CACHE_STALE_SECONDS
from .base import BulkQueueFull, BulkStatus, Store, StoreUnavailable

PREFIX = "growth:"
COUNTRIES = PREFIX + "countries"
SIZE = PREFIX + "size"
JOBS = PREFIX + "jobs"
BULK = PREFIX + "bulk"
REMAINING = PREFIX + "remaining"
DEAD = PREFIX + "dead"
DEAD_ERRORS = DEAD + ":errors"
# Times a chunk's script may fail before its job is moved to the dead letters: a failure inside the
# script (a malformed chunk, a key of another type) fails again, so a few attempts are enough.
CHUNK_ATTEMPTS = 3
# Log lines about failing bulk chunks, at most, per window: each failure is said until then, and the
# next line says how many were not.
FAILURE_LOG_LINES = 10
FAILURE_LOG_WINDOW_SECONDS = 60.0
# Series the cache holds at most; past it, it starts again empty.
CACHE_SERIES = 10_000
INVALIDATIONS = "__redis__:invalidate"
# Commands that may wait on a worker's pipelined connection; past it, requests are refused (503).
MAX_QUEUED_COMMANDS = 10_000
# Fields of one HSET in a bulk chunk: Lua's unpack() takes at most 8,000 values.
MAX_GROUP_FIELDS = 4000
# Records a list query examines per script, each series it reads counting SCAN_SERIES_COST more (reading a
# series costs about as much as reading that many years): about 3 ms of Redis time (see records()).
SCAN_BUDGET = 10_000
SCAN_SERIES_COST = 4
# How often an idle worker looks for queued jobs that no worker is applying (one script call).
QUEUE_POLL_SECONDS = 1.0
WAIT_POLL_SECONDS = 0.005

log = logging.getLogger("growth_gevent")

# Redis answers that mean "not now" rather than "wrong": unreachable, out of memory, loading, a
# replica, a cluster resharding; and BUSY (a long script), which redis-py has no class for.
_UNAVAILABLE = (redis.ConnectionError, redis.TimeoutError, redis.exceptions.OutOfMemoryError,
                redis.exceptions.ReadOnlyError, redis.exceptions.MasterDownError,
                redis.exceptions.TryAgainError)
_BUSY = "BUSY "
_NO_SUCH_DATABASE = "DB index is out of range"



def _lua(name):
    """The script ``stores/lua/{name}.lua``; each says there which KEYS and ARGV it takes."""
    return (_LUA_DIRECTORY / f"{name}.lua").read_text()


_LUA_DIRECTORY = pathlib.Path(__file__).resolve().parent / "lua"
_PUT = _lua("put")
_DELETE = _lua("delete")
_ENQUEUE = _lua("enqueue")
_APPLY_NEXT_CHUNK = _lua("apply_next_chunk")
_RECORDS = _lua("records")


def _available(method):
    """Redis being down, full or read-only is :class:`StoreUnavailable`; anything else is a bug."""
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except _UNAVAILABLE as error:
            raise StoreUnavailable(f"redis: {error}") from None
        except redis.ResponseError as error:
            if not str(error).startswith(_BUSY):
                raise
            raise StoreUnavailable(f"redis: {error}") from None
    return wrapper


def _series_key(country, indicator):
    return f"{PREFIX}s:{country}/{indicator}"


def _record_keys(country, indicator):
    return [_series_key(country, indicator), f"{PREFIX}i:{country}", COUNTRIES, SIZE]


def _encode_chunk(records):
    """One bulk chunk as the apply script reads it (see the key layout above)."""
    groups = []
    series = fields = None
    for (country, indicator, year), value in records:
        if (country, indicator) != series or len(fields) == MAX_GROUP_FIELDS:
            series, fields = (country, indicator), []
            groups.append((country, indicator, fields))
        fields += (year, value)
    parts = []
    for country, indicator, fields in groups:
        # ujson writes the numbers' exact text, in C; a number holds no comma, so quoting them is a replace.
        numbers = ujson.dumps(fields)[1:-1].replace(",", '","')
        parts.append(f'{_name_json(country)},{_name_json(indicator)},["{numbers}"]')
    return "[" + ",".join(parts) + "]"


def _name_json(name):
    return ujson.dumps(name, ensure_ascii=False)


def _command(*arguments):
    """One command in RESP, as Redis reads it (strings in UTF-8), encoded in C: a fifth of the time."""
    return hiredis.pack_command(arguments)


_PING = _command("PING")
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

    def __init__(self, options, timeout, verify_tls, stale_seconds):
        self._options = options
        self._timeout = timeout
        self._verify_tls = verify_tls
        self._stale_seconds = stale_seconds
        self._ping_seconds = stale_seconds / 4
        self._series = {}  # series key -> {year: value, or None for no record}
        self._fresh_as_of = -math.inf  # when the last PING answered was sent
        self._pings = collections.deque()  # when each PING not yet answered was sent
        self._connection = None
        self._wanted = Event()  # a read would like a fresher PING
        self._greenlets = []
        self._off = False  # the connection was lost, and not made again yet
        self._refused = False  # Redis refused tracking: reads go to Redis

    def get(self, series_key, year, read):
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

    def forget(self, series_key):
        """The worker wrote to the series: what is cached of it is no longer true."""
        self._series.pop(series_key, None)

    def close(self):
        gevent.killall(self._greenlets)
        if self._connection is not None:
            self._connection.close()

    def _follow(self):
        """The greenlet that reads invalidations and PING answers, connecting again when cut off."""
        while True:
            try:
                self._subscribe()
                while True:
                    for message in self._connection.receive():
                        self._receive(message)
            except _LOST as error:
                if not self._off:
                    log.warning("read cache off until its connection to Redis is back: %s", error)
                self._off = True
            except redis.ResponseError as error:  # tracking refused: Redis older than 6.0, or CLIENT disabled
                log.warning("read cache off: Redis refused it: %s", error)
                self._refused = True
                return
            finally:
                self._disconnect()
            gevent.sleep(QUEUE_POLL_SECONDS)

    def _subscribe(self):
        connection = _open_connection(self._options, self._timeout, self._verify_tls)
        try:
            own_id = _ask(connection, "CLIENT", "ID")
            _ask(connection, "CLIENT", "TRACKING", "on", "REDIRECT", own_id, "BCAST", "PREFIX", PREFIX + "s:")
            _ask(connection, "SUBSCRIBE", INVALIDATIONS)
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

    def _receive(self, message):
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

    def _ping(self):
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
                connection.sendall(_PING)
            except OSError:
                pass  # _follow sees it too, and connects again

    def _disconnect(self):
        self._fresh_as_of = -math.inf
        self._series.clear()
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class _Connection:
    """A connection of the store's own to Redis: a gevent socket, which waits cooperatively whether or not
    the standard library is patched (the tests do not patch it), and the reader of its replies, which
    turns error replies into redis-py's exceptions."""

    def __init__(self, sock):
        self.socket = sock
        self._reader = hiredis.Reader(replyError=BaseParser.parse_error)

    def receive(self):
        """The replies that the next read from the socket completes (maybe none)."""
        data = self.socket.recv(65536)
        if not data:
            raise ConnectionResetError("Redis closed the connection")
        self._reader.feed(data)
        replies = []
        while (reply := self._reader.gets()) is not False:
            replies.append(reply)
        return replies

    def unasked(self):
        """What Redis sent on a connection that has nothing in flight, checked without waiting: None, or
        the error to close it with (its end, which :class:`_NotSent` says; or a refusal, such as at its
        client limit)."""
        self.socket.settimeout(0.0)
        try:
            data = self.socket.recv(65536)
        except (BlockingIOError, gevent.ssl.SSLWantReadError):
            return None
        finally:
            self.socket.settimeout(None)
        if not data:
            return _NotSent("Redis had closed the connection")
        self._reader.feed(data)
        return _unasked_reply_error(self._reader.gets())

    def settimeout(self, seconds):
        self.socket.settimeout(seconds)

    def sendall(self, data):
        self.socket.sendall(data)

    def close(self):
        self.socket.close()


def _unasked_reply_error(reply):
    """The error to close a connection with, on which Redis sent ``reply`` unasked: Redis speaks first only
    to refuse a new connection."""
    return reply if isinstance(reply, redis.RedisError) else redis.ConnectionError(f"Redis sent {reply!r} unasked")


# What a lost connection raises: the socket's errors (timeouts too), a garbled stream, Redis refusing us
# while loading or at its client limit, or a wrong password (redis.ConnectionError covers the last ones).
_LOST = (OSError, hiredis.ProtocolError, redis.ConnectionError)


def _ask(connection, *arguments):
    """Send one command and wait for its reply, raising an error reply (before pipelining starts)."""
    connection.sendall(_command(*arguments))
    replies = []
    while not replies:
        replies = connection.receive()
    if isinstance(replies[0], redis.RedisError):
        raise replies[0]
    return replies[0]


def _open_connection(options, timeout, verify_tls):
    """A :class:`_Connection` to the Redis of ``options`` (redis-py's parse_url()), TCP, TLS or unix,
    authenticated and on the URL's database, that waits at most ``timeout`` seconds."""
    if "path" in options:
        sock = gevent.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(options["path"])
    else:
        host = options.get("host", "localhost")
        sock = gevent.socket.create_connection((host, options.get("port", 6379)), timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if options.get("connection_class") is redis.connection.SSLConnection:
            # gevent's context, whose sockets wait cooperatively (create_default_context() makes the
            # standard one).
            context = gevent.ssl.SSLContext(gevent.ssl.PROTOCOL_TLS_CLIENT)
            context.load_default_certs()
            if not verify_tls:
                context.check_hostname = False
                context.verify_mode = gevent.ssl.CERT_NONE
            sock = context.wrap_socket(sock, server_hostname=host)
    connection = _Connection(sock)
    try:
        password, username = options.get("password"), options.get("username")
        if password is not None:
            _ask(connection, "AUTH", *([username] if username else []), password)
        if options.get("db"):
            _ask(connection, "SELECT", options["db"])
    except BaseException:
        connection.close()
        raise
    return connection


class Pipeline:
    """One connection to Redis for every request greenlet of a worker, commands pipelined.

    A command is queued; a writer greenlet sends everything queued in one write; Redis answers in order,
    and a reader greenlet hands each reply to its caller. Concurrent requests thus share round trips,
    sends and reads: about 3 µs of this process's CPU per command against 45 through redis-py's pool
    (measured with 50 greenlets), and fewer wake-ups of Redis. Callers are served in the order they
    came; past MAX_QUEUED_COMMANDS waiting, a command is refused at once rather than queued.

    A command not answered within ``timeout`` seconds (checked every quarter of it), or a connection
    lost, fails every command waiting on the connection (whether one ran is unknown, as with any lost
    reply) and closes it; the next command connects again. Callers that arrive while a connection is
    being made wait for that attempt.
    """

    def __init__(self, options, timeout, verify_tls):
        self._options = options
        self._timeout = timeout
        self._verify_tls = verify_tls
        self._link = None  # the current connection's _Link
        self._attempt = None  # the greenlet making a connection, whose value is a _Link or an error

    def call(self, *arguments):
        """Redis's reply to one command; a redis-py exception for an error reply or a lost connection.
        A command that was not sent, the connection being found closed, is sent on a new one."""
        try:
            return self._call(arguments)
        except _NotSent:
            return self._call(arguments)

    def _call(self, arguments):
        link = self._link or self._connect()
        if len(link.waiting) >= MAX_QUEUED_COMMANDS:
            raise redis.ConnectionError(f"{MAX_QUEUED_COMMANDS} commands are already waiting for Redis")
        waiter = Waiter()
        link.outgoing.append(_command(*arguments))
        link.waiting.append((waiter, time.monotonic()))
        link.write_wanted.set()
        reply = waiter.get()  # an answer, or the error that failed the connection (see _Link._watch)
        if isinstance(reply, redis.RedisError):
            raise reply
        return reply

    def close(self):
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
            connection = _open_connection(self._options, self._timeout, self._verify_tls)
        except (*_LOST, redis.RedisError) as error:  # RedisError: AUTH or SELECT refused
            return redis.ConnectionError(f"cannot connect to Redis: {error}")
        connection.settimeout(None)  # how long a reply may take is up to call()
        self._link = _Link(connection, self._lost, self._timeout)
        return self._link

    def _lost(self, link):
        if self._link is link:
            self._link = None


class _Link:
    """One connection of a :class:`Pipeline`: its commands not yet written, its callers waiting in order."""

    def __init__(self, connection, on_lost, timeout):
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
        except _LOST as error:
            self.fail(redis.ConnectionError(f"connection to Redis lost: {error}"))

    def _read(self):
        try:
            while True:
                for reply in self._connection.receive():
                    if not self.waiting:
                        self.fail(_unasked_reply_error(reply))
                        return
                    # Waiters are switched to from the hub, as gevent requires.
                    self._hub.loop.run_callback(self.waiting.popleft()[0].switch, reply)
        except _LOST as error:
            self.fail(redis.ConnectionError(f"connection to Redis lost: {error}"))

    def _watch(self):
        """Fail the connection once its oldest command has waited ``timeout`` seconds for its answer: one
        check a quarter of the timeout, rather than a timer for each command."""
        while True:
            gevent.sleep(self._timeout / 4)
            if self.waiting and time.monotonic() - self.waiting[0][1] > self._timeout:
                self.fail(redis.TimeoutError(f"Redis did not answer within {self._timeout} s"))
                return


class _NotSent(redis.ConnectionError):
    """The command was not written: sending it on a new connection is safe."""


class RedisStore(Store):
    """The store in Redis, shared by every worker process and machine.

    Requests (records read and written, size, series, list queries, the bulk status and the queue's
    room) go through one :class:`Pipeline` connection, first come first served, record reads first
    through a :class:`ReadCache` (one more connection); queuing and applying bulk loads and the
    start-up checks through redis-py's blocking pool of ``pool_size`` connections, where a greenlet
    waits up to ``timeout`` seconds for a free connection. Past ``timeout`` without an answer, or when
    Redis refuses, a call raises :class:`StoreUnavailable`.
    Nothing is retried once sent: a script whose answer was lost may have run, and running it again
    would answer wrongly (a second PUT's 200 for a created record) or queue a bulk job twice. A
    connection that Redis closed is replaced before anything is written to it (the pool checks each
    one it hands out, the pipeline one that had nothing in flight), so the first request after a
    Redis restart succeeds anyway.
    """

    def __init__(self, url, pool_size, timeout, chunk_size=DEFAULT_BULK_CHUNK_RECORDS, verify_tls=True,
                 queue_records=DEFAULT_BULK_QUEUE_RECORDS, cache_stale_seconds=DEFAULT_REDIS_CACHE_STALE_SECONDS):
        """``queue_records``: the bound of :meth:`submit_bulk`, on every worker's jobs together;
        ``cache_stale_seconds``: that of :class:`ReadCache` for record reads, 0 for no cache (while reads
        use it, a PING goes to Redis every quarter of it)."""
        # Heroku's Redis serves TLS with a self-signed certificate: verify_tls=False accepts it.
        tls = {} if verify_tls or not url.lower().startswith("rediss://") else {"ssl_cert_reqs": "none"}
        pool = redis.BlockingConnectionPool.from_url(
            url, max_connections=pool_size, timeout=timeout, socket_timeout=timeout,
            socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0), **tls)
        self._redis = redis.Redis(connection_pool=pool)
        self._chunk_size = chunk_size
        self._queue_records = queue_records
        self._put = self._redis.register_script(_PUT)
        self._delete = self._redis.register_script(_DELETE)
        self._enqueue = self._redis.register_script(_ENQUEUE)
        self._apply_next_chunk = self._redis.register_script(_APPLY_NEXT_CHUNK)
        self._records = self._redis.register_script(_RECORDS)
        options = redis.connection.parse_url(url)
        self._pipeline = Pipeline(options, timeout, verify_tls)
        self._cache = ReadCache(options, timeout, verify_tls, cache_stale_seconds) if cache_stale_seconds else None
        self._wake = Event()
        self._failure_log = ThrottledLog(FAILURE_LOG_LINES, FAILURE_LOG_WINDOW_SECONDS, log)
        self._applier = gevent.spawn(self._apply_queued_jobs)

    @_available
    def ping(self):
        """Raises ValueError when the URL names a database the server does not have: a setting to fix,
        not an outage."""
        try:
            self._redis.ping()
        except redis.ResponseError as error:
            if not str(error).startswith(_NO_SUCH_DATABASE):
                raise
            raise ValueError(self._no_such_database()) from None

    def _no_such_database(self):
        pool = self._redis.connection_pool
        database = pool.connection_kwargs.get("db", 0)
        # CONFIG may be refused (managed Redis services rename it): the message then goes without the count.
        first_database = redis.ConnectionPool(connection_class=pool.connection_class,
                                              **{**pool.connection_kwargs, "db": 0})
        try:
            count = int(redis.Redis(connection_pool=first_database).config_get("databases")["databases"])
        except (redis.RedisError, KeyError):
            return f"the Redis URL selects database {database}, which the server does not have"
        finally:
            first_database.disconnect()
        return f"the Redis URL selects database {database}, but the server has {count} (0 to {count - 1})"

    @_available
    def get(self, key):
        country, indicator, year = key
        series_key = _series_key(country, indicator)
        if self._cache is None:
            return self._read(series_key, year)
        return self._cache.get(series_key, year, lambda: self._read(series_key, year))

    def _read(self, series_key, year):
        raw = self._pipeline.call("HGET", series_key, year)
        return None if raw is None else ujson.loads(raw)

    @_available
    def put(self, key, value):
        country, indicator, year = key
        keys = _record_keys(country, indicator)
        try:
            return self._run(self._put, keys, [year, ujson.dumps(value), country, indicator]) == 1
        finally:
            self._forget(keys[0])

    @_available
    def delete(self, key):
        country, indicator, year = key
        keys = _record_keys(country, indicator)
        try:
            return self._run(self._delete, keys, [year, country, indicator]) == 1
        finally:
            self._forget(keys[0])

    def _run(self, script, keys, arguments):
        """A script's reply, through the pipeline: by its SHA1, or whole when Redis does not have it (a
        NOSCRIPT answer means that it did not run)."""
        try:
            return self._pipeline.call("EVALSHA", script.sha, len(keys), *keys, *arguments)
        except redis.exceptions.NoScriptError:
            return self._pipeline.call("EVAL", script.script, len(keys), *keys, *arguments)

    def _forget(self, series_key):
        # Also when the write failed: its answer may have been lost after it was made.
        if self._cache is not None:
            self._cache.forget(series_key)

    @_available
    def size(self):
        return int(self._pipeline.call("GET", SIZE) or 0)

    @_available
    def series(self, country, indicator, first=None, last=None):
        key = _series_key(country, indicator)
        if first is not None and first == last:
            raw = self._pipeline.call("HGET", key, first)
            return [] if raw is None else [(first, ujson.loads(raw))]
        flat = self._pipeline.call("HGETALL", key)
        values = sorted((int(flat[k]), flat[k + 1]) for k in range(0, len(flat), 2))
        return [(year, ujson.loads(raw)) for year, raw in values
                if (first is None or year >= first) and (last is None or year <= last)]

    @_available
    def records(self, country=None, indicator=None, first=None, last=None, offset=0, limit=100):
        """Read in scripts of about SCAN_BUDGET records each, so that a query across the whole store holds
        Redis no longer than one of them at a time: each series is read whole, in one script, but a
        write between two scripts may show in the series read after it and not in those before."""
        given = ["" if argument is None else argument for argument in (country, indicator, first, last)]
        total, page, after = 0, [], ("", "")
        while True:
            matching, flat, *after = self._run(
                self._records, [], [PREFIX, *given, max(0, offset - total), limit - len(page), *after, SCAN_BUDGET,
                                    SCAN_SERIES_COST])
            total += matching
            page += [((flat[k].decode(), flat[k + 1].decode(), int(flat[k + 2])), ujson.loads(flat[k + 3]))
                     for k in range(0, len(flat), 4)]
            if not after[0]:
                return total, page

    @_available
    def submit_bulk(self, records, initial=False):
        chunks = []
        size = self._chunk_size
        for start in range(0, len(records), size):
            chunks.append(_encode_chunk(records[start:start + size]))
            let_io_run()  # encoding 42,450 records takes tens of milliseconds
        job, pending = self._enqueue([BULK, JOBS, SIZE, REMAINING],
                                     [PREFIX, int(initial), len(records), self._queue_records, *chunks])
        if not job:
            if initial:
                return None
            raise BulkQueueFull(pending, self._queue_records, len(records))
        self._wake.set()
        return job

    @_available
    def check_bulk_room(self, records):
        # One round trip; stores/lua/enqueue.lua decides again, in the same step as it queues.
        pending = int(self._pipeline.call("HGET", BULK, "pending") or 0)
        if pending + records > self._queue_records:
            raise BulkQueueFull(pending, self._queue_records, records)

    @_available
    def needs_initial_data(self):
        """Redis lost its data (restarted empty, flushed): no records, no job queued, and initial data
        not queued since; decided in one round trip."""
        with self._redis.pipeline(transaction=False) as pipeline:
            size, queued, initial = pipeline.get(SIZE).llen(JOBS).hexists(BULK, "initial").execute()
        return not int(size or 0) and not queued and not initial

    @_available
    def bulk_status(self):
        fields = self._pipeline.call("HMGET", BULK, "latest_applied", "latest_total", "accepted", "applied",
                                     "records", "pending", "failed")
        return BulkStatus.of(*(int(field or 0) for field in fields))

    def wait_idle(self, timeout=None):
        """Every job accepted so far, by any worker, applied or given up on; False at once if Redis cannot
        be reached, since what is queued stays queued in Redis for whichever worker runs next."""
        deadline = None if timeout is None else time.monotonic() + timeout
        target = None
        while True:
            try:
                status = self.bulk_status()
            except StoreUnavailable:
                return False
            target = status.jobs_accepted if target is None else target
            if status.jobs_applied + status.jobs_failed >= target:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            self._wake.set()
            gevent.sleep(WAIT_POLL_SECONDS)

    def close(self):
        self._applier.kill()
        self._pipeline.close()
        if self._cache is not None:
            self._cache.close()
        self._redis.close()
        self._redis.connection_pool.disconnect()

    def _apply_queued_jobs(self):
        """The background greenlet: apply queued chunks while there are any, yielding between them."""
        paused = False
        while True:
            self._wake.wait(QUEUE_POLL_SECONDS)
            self._wake.clear()
            try:
                while self._apply_one_chunk():
                    let_io_run()
            except StoreUnavailable as error:
                if not paused:
                    log.warning("bulk loading paused, will resume when the store is back: %s", error)
                paused = True
            except Exception:  # a bug; the greenlet must live on to apply later jobs once it is fixed
                self._failure_log.log(logging.ERROR, "bulk loading failed; retrying every %ss", QUEUE_POLL_SECONDS,
                                      exc_info=True)
            else:
                paused = False

    @_available
    def _apply_one_chunk(self):
        """Apply the oldest job's next chunk. False when nothing is queued, or when the chunk failed and
        is to be tried again at the next wake-up; True when there may be more to apply now."""
        outcome, *failure = self._apply_next_chunk([JOBS, BULK, SIZE, COUNTRIES, REMAINING, DEAD, DEAD_ERRORS],
                                                   [PREFIX, CHUNK_ATTEMPTS])
        if outcome == b"idle":
            return False
        if outcome == b"applied":
            return True
        job, attempt, error = int(failure[0]), failure[1], failure[2].decode(errors="replace")
        if outcome == b"failed":
            self._failure_log.log(logging.WARNING, "bulk job %d: a chunk failed (attempt %d of %d), to be tried "
                                  "again: %s", job, attempt, CHUNK_ATTEMPTS, error)
            return False
        self._failure_log.log(logging.ERROR, "bulk job %d given up after %d failed attempts, later jobs proceed; "
                              "its chunks not applied are kept in %s:%d: %s", job, attempt, DEAD, job, error)
        return True
