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
import socket
import time

import gevent
import gevent.socket
import gevent.ssl
import hiredis
import redis
import ujson
from gevent.event import Event
from redis.backoff import NoBackoff
from redis.retry import Retry

from .bulk import DEFAULT_CHUNK_SIZE, BulkStatus
from .config import DEFAULT_BULK_QUEUE_RECORDS
from .store import BulkQueueFull, Store, StoreUnavailable

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
# Record reads served from the worker's cache miss no write acknowledged more than this long before
# (see ReadCache); 0 turns the cache off. While reads use it, a PING goes to Redis every quarter of it.
CACHE_STALE_SECONDS = 0.1
# Series the cache holds at most; past it, it starts again empty.
CACHE_SERIES = 10_000
INVALIDATIONS = "__redis__:invalidate"
# Fields of one HSET in a bulk chunk: Lua's unpack() takes at most 8,000 values.
MAX_GROUP_FIELDS = 4000
# Records a list query examines per script, about 2 ms of Redis time (see records()).
SCAN_BUDGET = 10_000
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

# KEYS of PUT and DELETE: series, the country's indicators, countries, size.
# ARGV of PUT: year, value, country, indicator; of DELETE: year, country, indicator.
_PUT = """
local created = redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if created == 1 then
  redis.call('INCR', KEYS[4])
  if redis.call('HLEN', KEYS[1]) == 1 then
    redis.call('ZADD', KEYS[2], 0, ARGV[4])
    redis.call('ZADD', KEYS[3], 0, ARGV[3])
  end
end
return created
"""

_DELETE = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('DECR', KEYS[4])
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('ZREM', KEYS[2], ARGV[3])
  if redis.call('EXISTS', KEYS[2]) == 0 then redis.call('ZREM', KEYS[3], ARGV[2]) end
end
return 1
"""

# KEYS: bulk, jobs, size, remaining; ARGV: prefix, initial data (1 or 0), record count, queue bound,
# chunk... Returns {job, pending}: job 0 when nothing was queued (initial data not taken, or the
# queue full), pending the records accepted and not applied, this job's included.
_ENQUEUE = """
local pending = tonumber(redis.call('HGET', KEYS[1], 'pending') or 0)
local count = tonumber(ARGV[3])
if ARGV[2] == '1' then
  if tonumber(redis.call('GET', KEYS[3]) or 0) > 0 or redis.call('LLEN', KEYS[2]) > 0
      or redis.call('HSETNX', KEYS[1], 'initial', 1) == 0 then
    return {0, pending}
  end
elseif pending + count > tonumber(ARGV[4]) then
  return {0, pending}
end
local id = redis.call('HINCRBY', KEYS[1], 'accepted', 1)
local job = ARGV[1] .. 'job:' .. id
for k = 5, #ARGV do redis.call('RPUSH', job, ARGV[k]) end
redis.call('RPUSH', KEYS[2], id)
redis.call('HSET', KEYS[4], id, count)
redis.call('HSET', KEYS[1], 'latest_total', count, 'latest_applied', 0)
return {id, redis.call('HINCRBY', KEYS[1], 'pending', count)}
"""

# KEYS: jobs, bulk, size, countries, remaining, dead, dead errors; ARGV: prefix, attempts per chunk.
# Returns {'idle'} when nothing is queued, {'applied', records}, or, when the chunk failed,
# {'failed', job, attempt, error} to be tried again or {'dead', job, attempt, error} once given up on.
_APPLY_NEXT_CHUNK = """
local id = redis.call('LINDEX', KEYS[1], 0)
if not id then return {'idle'} end
local p = ARGV[1]
local job = p .. 'job:' .. id
local function apply(chunk)
  local r = cjson.decode(chunk)
  local count = 0
  for k = 1, #r, 3 do
    local country, indicator, fields = r[k], r[k + 1], r[k + 2]
    local series = p .. 's:' .. country .. '/' .. indicator
    local new = redis.call('HSET', series, unpack(fields))
    if new > 0 then redis.call('INCRBY', KEYS[3], new) end
    -- Indexed every time, not only when the series is new: a chunk applied again after a failure
    -- finds its records there already, and must still index them.
    redis.call('ZADD', p .. 'i:' .. country, 0, indicator)
    redis.call('ZADD', KEYS[4], 0, country)
    count = count + #fields / 2
  end
  return count
end
-- The chunk is removed after it is applied, and size grows as records are written: should the script
-- stop halfway, the chunk stays queued whole, is applied again, and size still counts every record once.
local chunk = redis.call('LINDEX', job, 0)
local count = 0
if chunk then
  local applied, result = pcall(apply, chunk)
  if not applied then
    -- A Lua error is a string; a Redis error, a string or a table {err = ...} depending on the version.
    local message = type(result) == 'table' and result.err or tostring(result)
    -- A write that the whole server refuses (out of memory, read-only, failing to save) refuses this
    -- count too, so the script fails as a whole: the chunk waits for the server, no attempt spent.
    local attempt = redis.call('HINCRBY', KEYS[2], 'attempts', 1)
    if attempt < tonumber(ARGV[2]) then return {'failed', id, attempt, message} end
    redis.call('RENAME', job, KEYS[6] .. ':' .. id)
    redis.call('RPUSH', KEYS[6], id)
    redis.call('HSET', KEYS[7], id, message)
    redis.call('LPOP', KEYS[1])
    redis.call('HINCRBY', KEYS[2], 'pending', -tonumber(redis.call('HGET', KEYS[5], id) or 0))
    redis.call('HDEL', KEYS[5], id)
    redis.call('HDEL', KEYS[2], 'attempts')
    redis.call('HINCRBY', KEYS[2], 'failed', 1)
    return {'dead', id, attempt, message}
  end
  count = result
  redis.call('LPOP', job)
  redis.call('HDEL', KEYS[2], 'attempts')
  redis.call('HINCRBY', KEYS[2], 'records', count)
  redis.call('HINCRBY', KEYS[2], 'pending', -count)
  redis.call('HINCRBY', KEYS[5], id, -count)
  if redis.call('HGET', KEYS[2], 'accepted') == id then
    redis.call('HINCRBY', KEYS[2], 'latest_applied', count)
  end
end
if redis.call('EXISTS', job) == 0 then
  redis.call('LPOP', KEYS[1])
  redis.call('HDEL', KEYS[5], id)
  redis.call('HINCRBY', KEYS[2], 'applied', 1)
end
return {'applied', count}
"""

# ARGV: prefix, country, indicator, first, last ('' for not given), skip, room, after country, after
# indicator, budget. Reads series in order from the one after (after country, after indicator), or from
# the first when those are '', until it has examined ``budget`` records: it skips ``skip`` matching
# records, then takes up to ``room``. Returns {matching, {country, indicator, year, value, ...}, country,
# indicator}: how many records of the series read match, the page part, and the last series read, or
# '', '' when there is none after it. Years are compared as decimal integers of any length.
_RECORDS = """
local function less(a, b)
  local a_negative, b_negative = a:byte(1) == 45, b:byte(1) == 45
  if a_negative ~= b_negative then return a_negative end
  if #a ~= #b then return (#a < #b) ~= a_negative end
  if a_negative then return a > b end
  return a < b
end
local p, first, last = ARGV[1], ARGV[4], ARGV[5]
local skip, room = tonumber(ARGV[6]), tonumber(ARGV[7])
local after_country, after_indicator, budget = ARGV[8], ARGV[9], tonumber(ARGV[10])
-- Up to 15 digits a number is exact as a Lua number: such years are compared as numbers, which is
-- three times faster than less(); a longer year or bound falls back to less().
local exact = #first <= 15 and #last <= 15
local lowest = first == '' and -math.huge or tonumber(first)
local highest = last == '' and math.huge or tonumber(last)
-- Each series costs at least 1 of the budget, so budget + 1 names (the first may be finished) are enough.
local countries = ARGV[2] ~= '' and {ARGV[2]} or redis.call('ZRANGEBYLEX', p .. 'countries',
  after_country == '' and '-' or '[' .. after_country, '+', 'LIMIT', 0, budget + 1)
local total, page, examined = 0, {}, 0
for _, country in ipairs(countries) do
  local after = country == after_country and after_indicator or ''
  local indicators
  if ARGV[3] ~= '' then
    indicators = after == '' and {ARGV[3]} or {}
  else
    indicators = redis.call('ZRANGEBYLEX', p .. 'i:' .. country, after == '' and '-' or '(' .. after, '+',
      'LIMIT', 0, budget)
  end
  for _, indicator in ipairs(indicators) do
    local series = p .. 's:' .. country .. '/' .. indicator
    local years, count
    if first == '' and last == '' then
      count = redis.call('HLEN', series)
      examined = examined + 1
    elseif first == last then
      years = redis.call('HEXISTS', series, first) == 1 and {first} or {}
      count = #years
      examined = examined + 1
    else
      years, count = {}, 0
      local all = redis.call('HKEYS', series)
      for _, year in ipairs(all) do
        local number = exact and #year <= 15 and tonumber(year)
        if number then
          if number >= lowest and number <= highest then count = count + 1; years[count] = year end
        elseif (first == '' or not less(year, first)) and (last == '' or not less(last, year)) then
          count = count + 1; years[count] = year
        end
      end
      examined = examined + #all
    end
    if count > skip and room > 0 then
      years = years or redis.call('HKEYS', series)
      table.sort(years, less)
      local stop = math.min(#years, skip + room)
      for k = skip + 1, stop do
        local n = #page
        page[n + 1], page[n + 2], page[n + 3] = country, indicator, years[k]
        page[n + 4] = redis.call('HGET', series, years[k])
      end
      room = room - (stop - skip)
    end
    skip = math.max(0, skip - count)
    total = total + count
    if examined >= budget then return {total, page, country, indicator} end
  end
end
return {total, page, '', ''}
"""


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


class ThrottledLog:
    """Log lines, at most ``lines`` per ``window`` seconds: a burst is said up to the limit, then left out
    and counted, and the next line said tells how many were, so that the log neither floods nor goes silent."""

    def __init__(self, lines, window, clock=time.monotonic):
        self._lines = lines
        self._window = window
        self._clock = clock
        self._said = collections.deque()  # when each line of the current window was said
        self._left_out = 0

    def log(self, level, message, *args, exc_info=False):
        now = self._clock()
        while self._said and now - self._said[0] >= self._window:
            self._said.popleft()
        if len(self._said) >= self._lines:
            self._left_out += 1
            return
        self._said.append(now)
        if self._left_out:
            message += " (%d similar lines left out before this one)"
            args += (self._left_out,)
            self._left_out = 0
        log.log(level, message, *args, exc_info=exc_info)


def _command(*arguments):
    """One command in RESP, as Redis reads it."""
    encoded = [argument if isinstance(argument, bytes) else str(argument).encode() for argument in arguments]
    return b"*%d\r\n" % len(encoded) + b"".join(b"$%d\r\n%s\r\n" % (len(part), part) for part in encoded)


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

    def __init__(self, url, timeout, verify_tls, stale_seconds):
        self._options = redis.connection.parse_url(url)
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
                reader = hiredis.Reader()
                while True:
                    _receive_into(reader, self._connection)
                    while (message := reader.gets()) is not False:
                        self._receive(message)
            except (OSError, hiredis.ProtocolError) as error:  # ConnectionError and socket timeouts too
                if not self._off:
                    log.warning("read cache off until its connection to Redis is back: %s", error)
                self._off = True
            except _TrackingRefused as error:
                log.warning("read cache off: %s", error)
                self._refused = True
                return
            finally:
                self._disconnect()
            gevent.sleep(QUEUE_POLL_SECONDS)

    def _subscribe(self):
        connection = self._open_socket()
        try:
            reader = hiredis.Reader()

            def ask(*arguments):
                connection.sendall(_command(*arguments))
                while (reply := reader.gets()) is False:
                    _receive_into(reader, connection)
                if isinstance(reply, hiredis.ReplyError):
                    raise _TrackingRefused(f"Redis refused {arguments[0]} {arguments[1]}: {reply}")
                return reply

            password, username = self._options.get("password"), self._options.get("username")
            if password is not None:
                ask("AUTH", *([username] if username else []), password)
            own_id = ask("CLIENT", "ID")
            ask("CLIENT", "TRACKING", "on", "REDIRECT", own_id, "BCAST", "PREFIX", PREFIX + "s:")
            ask("SUBSCRIBE", INVALIDATIONS)
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

    def _open_socket(self):
        options = self._options
        if "path" in options:
            connection = gevent.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            connection.settimeout(self._timeout)
            connection.connect(options["path"])
            return connection
        host = options.get("host", "localhost")
        connection = gevent.socket.create_connection((host, options.get("port", 6379)), self._timeout)
        if options.get("connection_class") is not redis.connection.SSLConnection:
            return connection
        # gevent's context, whose sockets wait cooperatively (create_default_context() makes the standard one).
        context = gevent.ssl.SSLContext(gevent.ssl.PROTOCOL_TLS_CLIENT)
        context.load_default_certs()
        if not self._verify_tls:
            context.check_hostname = False
            context.verify_mode = gevent.ssl.CERT_NONE
        return context.wrap_socket(connection, server_hostname=host)

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


def _receive_into(reader, connection):
    data = connection.recv(65536)
    if not data:
        raise ConnectionResetError("Redis closed the connection")
    reader.feed(data)


class _TrackingRefused(Exception):
    """Redis refused a command the read cache needs (older than 6.0, or the command disabled)."""


class RedisStore(Store):
    """The store in Redis, through a blocking pool of ``pool_size`` connections shared by the greenlets.

    A greenlet waits up to ``timeout`` seconds for a free connection and for an answer; past that, or
    when Redis refuses, the call raises :class:`StoreUnavailable`. Nothing is retried: a script whose
    answer was lost may have run, and running it again would answer wrongly (a second PUT's 200 for a
    created record) or queue a bulk job twice. The pool reconnects a connection that Redis closed before
    handing it out, so the first request after a Redis restart succeeds anyway. Record reads go through
    a :class:`ReadCache`, which holds one more connection.
    """

    def __init__(self, url, pool_size, timeout, chunk_size=DEFAULT_CHUNK_SIZE, verify_tls=True,
                 queue_records=DEFAULT_BULK_QUEUE_RECORDS, cache_stale_seconds=CACHE_STALE_SECONDS):
        """``queue_records``: the bound of :meth:`submit_bulk`, on every worker's jobs together;
        ``cache_stale_seconds``: that of :class:`ReadCache` for record reads, 0 for no cache."""
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
        self._cache = ReadCache(url, timeout, verify_tls, cache_stale_seconds) if cache_stale_seconds else None
        self._wake = Event()
        self._failure_log = ThrottledLog(FAILURE_LOG_LINES, FAILURE_LOG_WINDOW_SECONDS)
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
        raw = self._redis.hget(series_key, year)
        return None if raw is None else ujson.loads(raw)

    @_available
    def put(self, key, value):
        country, indicator, year = key
        keys = _record_keys(country, indicator)
        try:
            return self._put(keys, [year, ujson.dumps(value), country, indicator]) == 1
        finally:
            self._forget(keys[0])

    @_available
    def delete(self, key):
        country, indicator, year = key
        keys = _record_keys(country, indicator)
        try:
            return self._delete(keys, [year, country, indicator]) == 1
        finally:
            self._forget(keys[0])

    def _forget(self, series_key):
        # Also when the write failed: its answer may have been lost after it was made.
        if self._cache is not None:
            self._cache.forget(series_key)

    @_available
    def size(self):
        return int(self._redis.get(SIZE) or 0)

    @_available
    def series(self, country, indicator, first=None, last=None):
        key = _series_key(country, indicator)
        if first is not None and first == last:
            raw = self._redis.hget(key, first)
            return [] if raw is None else [(first, ujson.loads(raw))]
        values = sorted((int(year), raw) for year, raw in self._redis.hgetall(key).items())
        return [(year, ujson.loads(raw)) for year, raw in values
                if (first is None or year >= first) and (last is None or year <= last)]

    @_available
    def records(self, country=None, indicator=None, first=None, last=None, offset=0, limit=100):
        """Read in scripts of SCAN_BUDGET records each, so that a query across the whole store holds
        Redis no longer than one of them at a time: each series is read whole, in one script, but a
        write between two scripts may show in the series read after it and not in those before."""
        given = ["" if argument is None else argument for argument in (country, indicator, first, last)]
        total, page, after = 0, [], ("", "")
        while True:
            matching, flat, *after = self._records(
                [], [PREFIX, *given, max(0, offset - total), limit - len(page), *after, SCAN_BUDGET])
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
            gevent.sleep(0)  # encoding 42,450 records takes tens of milliseconds
        job, pending = self._enqueue([BULK, JOBS, SIZE, REMAINING],
                                     [PREFIX, int(initial), len(records), self._queue_records, *chunks])
        if not job:
            if initial:
                return None
            raise BulkQueueFull(pending, self._queue_records)
        self._wake.set()
        return job

    @_available
    def needs_initial_data(self):
        """Redis lost its data (restarted empty, flushed): no records, no job queued, and initial data
        not queued since; decided in one round trip."""
        with self._redis.pipeline(transaction=False) as pipeline:
            size, queued, initial = pipeline.get(SIZE).llen(JOBS).hexists(BULK, "initial").execute()
        return not int(size or 0) and not queued and not initial

    @_available
    def bulk_status(self):
        fields = self._redis.hmget(BULK, "latest_applied", "latest_total", "accepted", "applied", "records",
                                   "pending", "failed")
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
                    gevent.sleep(0)
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
