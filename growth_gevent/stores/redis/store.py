"""The Redis store: the memory store's contract, shared by every worker process and machine.

Bulk jobs are queued whole in one script; any worker then applies the oldest job's next chunk, one
script per chunk that removes the chunk as it applies it, so jobs are applied in order, each chunk
exactly once, and a job whose worker died is finished by another. A chunk that fails CHUNK_ATTEMPTS
times (malformed, or a key of another type in the way) moves its job to the dead letters, so that later
jobs proceed. The keys are in :mod:`.keys`, the scripts in :mod:`.scripts`, the reads across many series
(list queries, the export, the facets) in :mod:`.reads`.
"""

import functools
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import gevent
import redis
import ujson
from gevent.event import Event
from redis.backoff import NoBackoff
from redis.retry import Retry

from ...core.logs import ThrottledLog
from ...core.loop import let_io_run
from ...core.records import Key, Number, Record
from ..base import (
    JOBS_KEPT,
    BulkQueueFull,
    BulkStatus,
    Check,
    Facet,
    Health,
    JobStatus,
    Store,
    StoreFull,
    StoreUnavailable,
)
from . import descriptions, scripts
from .cache import ReadCache
from .connection import LOST, Connect, Connection, ask_all, open_connection
from .errors import available
from .keys import (
    BULK,
    COUNTRIES,
    DEAD,
    DEAD_ERRORS,
    JOB_RECORDS,
    JOBS,
    PREFIX,
    REMAINING,
    SIZE,
    YEAR_RANGES,
    encode_chunk,
    new_keys_key,
    record_keys,
    series_key,
)
from .persistence import PersistenceWatch
from .reads import Reads
from .scripts import Script
from .sentinel import PrimaryConnection, PrimarySSLConnection, SentinelPrimary, SentinelURL
from .shared_connection import NotReplicated, SharedConnection

# Times a chunk's script may fail before its job is moved to the dead letters: a failure inside the
# script (a malformed chunk, a key of another type) fails again, so a few attempts are enough.
CHUNK_ATTEMPTS = 3
# Log lines about failing bulk chunks, at most, per window: each failure is said until then, and the
# next line says how many were not.
FAILURE_LOG_LINES = 10
FAILURE_LOG_WINDOW_SECONDS = 60.0
# How often an idle worker looks for queued jobs that no worker is applying (one script call).
QUEUE_POLL_SECONDS = 1.0
WAIT_POLL_SECONDS = 0.005

log = logging.getLogger("growth_gevent")

_NO_SUCH_DATABASE = "DB index is out of range"


def _with_scripts(connect: Connect) -> Connection:
    """A connection with the scripts loaded (SCRIPT LOAD, all in one round trip), so that the writers that find
    Redis without them (restarted, or a new primary) do not each send one whole; best effort, as EVAL follows a
    NOSCRIPT."""
    connection = connect()
    try:
        ask_all(connection, [("SCRIPT", "LOAD", script.source) for script in scripts.EVERY])
    except redis.ResponseError:
        pass  # SCRIPT refused (a managed Redis may rename it)
    except LOST:
        connection.close()  # not left to the collector: a connection lost while it loads is closed at once
        raise
    return connection


class RedisStore(Store):
    """The store in Redis, shared by every worker process and machine.

    Requests (records read and written, size, series, list queries, the bulk status and the queue's
    room) go through one :class:`SharedConnection`, first come first served, record reads first
    through a :class:`ReadCache` (one more connection); queuing and applying bulk loads and the
    start-up checks through redis-py's blocking pool of ``pool_size`` connections, where a greenlet
    waits up to ``timeout`` seconds for a free connection. Past ``timeout`` without an answer, or when
    Redis refuses, a call raises :class:`StoreUnavailable`.
    Nothing is retried once sent: a script whose answer was lost may have run, and running it again
    would answer wrongly (a second PUT's 200 for a created record) or queue a bulk job twice. A
    connection that Redis closed is replaced before anything is written to it (the pool checks each
    one it hands out, the shared connection one that had nothing in flight), so the first request after a
    Redis restart succeeds anyway.
    """

    name = "redis"

    def __init__(self, url: str, *, pool_size: int, timeout: float, chunk_size: int, queue_records: int,
                 max_records: int, cache_stale_seconds: float, verify_tls: bool, jobs_kept: int = JOBS_KEPT,
                 min_replicas: int = 0, replica_timeout: float = 0.0, sentinel: bool = False):
        """``url``: ``redis://``, ``rediss://``, ``unix://``, or with ``sentinel`` (which the composition
        root's table of URL schemes sets) ``redis+sentinel://`` (and ``rediss+sentinel://``) for the
        primary that Sentinels name (:mod:`.sentinel`); a URL that cannot be read is a ValueError.
        ``chunk_size``: records per bulk chunk (one script each); ``queue_records``: the bound of
        :meth:`submit_bulk`, on every worker's jobs together;
        ``max_records``: the most records stored, on every worker's writes together (:class:`StoreFull`);
        ``cache_stale_seconds``: that of :class:`ReadCache` for record reads, 0 for no cache (while reads
        use it, a PING goes to Redis every quarter of it); ``verify_tls``: False accepts any certificate
        of a ``rediss://`` server; ``jobs_kept``: the bulk jobs job_status() knows, the last accepted by any
        worker; ``min_replicas``: replicas that must confirm each write (WAIT), within ``replica_timeout``
        seconds, before it is acknowledged."""
        self._primary = None
        located = SentinelURL.parse(url) if sentinel else None
        options = located.options if located is not None else redis.connection.parse_url(url)
        # the parsed URL says whether it asks for TLS (rediss, rediss+sentinel): no scheme is read here
        secure = options.get("connection_class") is redis.connection.SSLConnection
        if located is not None:
            self._primary = SentinelPrimary(located, timeout, verify_tls)
            connect = self._primary.connect
            node_options = {key: value for key, value in options.items() if key != "connection_class"}
            pool_options = {"connection_class": PrimarySSLConnection if secure else PrimaryConnection,
                            "primary": self._primary, **node_options}
        else:
            connect = functools.partial(open_connection, options, timeout, verify_tls)
            pool_options = {"url": url}
        # Heroku's Redis serves TLS with a self-signed certificate: verify_tls=False accepts it.
        tls = {"ssl_cert_reqs": "none"} if secure and not verify_tls else {}
        pool_class = redis.BlockingConnectionPool
        make_pool = pool_class.from_url if "url" in pool_options else pool_class
        pool = make_pool(**pool_options, max_connections=pool_size, timeout=timeout, socket_timeout=timeout,
                         socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0), **tls)
        self._redis = redis.Redis(connection_pool=pool)
        self._chunk_size = chunk_size
        self._queue_records = queue_records
        self._max_records = max_records
        self._jobs_kept = jobs_kept
        self._min_replicas = min_replicas
        self._replica_timeout = replica_timeout
        self._enqueue = self._redis.register_script(scripts.ENQUEUE.source)
        self._apply_next_chunk = self._redis.register_script(scripts.APPLY_NEXT_CHUNK.source)
        self._shared = SharedConnection(functools.partial(_with_scripts, connect), timeout, replicas=min_replicas,
                                        wait_seconds=replica_timeout)
        self._cache = ReadCache(connect, timeout, cache_stale_seconds) if cache_stale_seconds else None
        self._reads = Reads(self._call)
        if self._primary is not None:
            self._primary.on_change(self._primary_lost)
        self._persistence = PersistenceWatch(self._shared.call, min_replicas)
        self._wake = Event()
        self._failure_log = ThrottledLog(FAILURE_LOG_LINES, FAILURE_LOG_WINDOW_SECONDS, log)
        self._applier = gevent.spawn(self._apply_queued_jobs)

    def ping(self) -> None:
        """The start-up check: raises ValueError when the URL names a database the server does not have
        (a setting to fix, not an outage), StoreUnavailable when Redis does not answer. Then, or once Redis
        answers, says what a Redis crash would lose and watches for Redis losing its data (see
        :mod:`.durability`)."""
        try:
            self._ping()
        finally:
            self._persistence.start()
            self._reads.build_tallies()

    @available
    def _ping(self) -> None:
        try:
            self._redis.ping()
        except redis.ResponseError as error:
            if not str(error).startswith(_NO_SUCH_DATABASE):
                raise
            raise ValueError(self._no_such_database()) from None

    def _not_primary(self, error: Exception) -> None:
        """Redis answered READONLY: the node written to is a replica now."""
        if self._primary is not None:
            self._primary.suspect(f"it answered {error}")

    def _primary_lost(self) -> None:
        """The Sentinels' primary is given up (see :class:`SentinelPrimary`): every connection to it is
        closed, and the cache emptied, since the next primary may lack what this one sent it last."""
        self._shared.disconnect("the Redis primary changed, or is failing over")
        if self._cache is not None:
            self._cache.reset()
        self._reads.forget()
        self._redis.connection_pool.disconnect()

    def health(self) -> Health:
        return Health(writes_refused=self._persistence.missing_replicas, data_losses=self._persistence.losses)

    def _no_such_database(self) -> str:
        pool = self._redis.connection_pool
        database = pool.connection_kwargs.get("db", 0)
        # CONFIG may be refused (managed Redis services rename it): the message then goes without the count.
        first_database = redis.ConnectionPool(connection_class=pool.connection_class,
                                              **{**pool.connection_kwargs, "db": 0})
        try:
            databases = redis.Redis(connection_pool=first_database).config_get("databases")["databases"]
        except (redis.RedisError, KeyError):
            databases = None
        finally:
            first_database.disconnect()
        if databases is None:
            return f"the Redis URL selects database {database}, which the server does not have"
        count = int(databases)
        return f"the Redis URL selects database {database}, but the server has {count} (0 to {count - 1})"

    @available
    def get(self, key: Key) -> Number | None:
        country, indicator, year = key
        series = series_key(country, indicator)
        if self._cache is None:
            return self._read(series, year)
        return self._cache.get(series, year, lambda: self._read(series, year))

    def _read(self, series: str, year: int) -> Number | None:
        raw = self._shared.call("HGET", series, year)
        return None if raw is None else ujson.loads(raw)

    @available
    def put(self, key: Key, value: Number, check: Check | None = None) -> bool:
        country, indicator, year = key
        keys = record_keys(country, indicator)
        arguments = [year, ujson.dumps(value), country, indicator, self._max_records, PREFIX]
        try:
            created = self._checked(scripts.PUT, [*keys, new_keys_key(country, indicator), BULK, YEAR_RANGES],
                                    arguments, check)
        finally:
            self._forget(keys[0])
        if isinstance(created, list):  # [b"full", size]: nothing written
            raise StoreFull(int(created[1]), self._max_records, 1)
        return created == 1

    @available
    def delete(self, key: Key, check: Check | None = None) -> bool:
        country, indicator, year = key
        keys = record_keys(country, indicator)
        try:
            return self._checked(scripts.DELETE, [*keys, YEAR_RANGES],
                                 [year, country, indicator, PREFIX], check) == 1
        finally:
            self._forget(keys[0])

    def _checked(self, script: Script, keys: list[str], arguments: list[Any], check: Check | None) -> Any:
        """The reply of a put or delete script (a write: :meth:`SharedConnection.write`), run once ``check``
        passed on the value stored (when given): the script writes only if that value is still the one
        stored, else this reads and checks again."""
        while True:
            if check is None:
                return script.run(self._shared.write, keys, arguments)
            raw = self._shared.call("HGET", keys[0], arguments[0])
            check(None if raw is None else ujson.loads(raw))
            reply = script.run(self._shared.write, keys, [*arguments, raw or ""])
            if reply != [b"changed"]:
                return reply

    def _run(self, script: Script, keys: list[str], arguments: list[Any]) -> Any:
        """A script's reply, through the shared connection."""
        return script.run(self._shared.call, keys, arguments)

    def _forget(self, series: str) -> None:
        # Also when the write failed: its answer may have been lost after it was made.
        if self._cache is not None:
            self._cache.forget(series)

    @available
    def size(self) -> int:
        return int(self._shared.call("GET", SIZE) or 0)

    # The reads across many series are :class:`Reads`'s, through _call.

    def series(self, country: str, indicator: str, first: int | None = None,
               last: int | None = None) -> list[tuple[int, Number]]:
        return self._reads.series(country, indicator, first, last)

    def records(self, country: str | None = None, indicator: str | None = None, first: int | None = None,
                last: int | None = None, offset: int = 0, limit: int = 100,
                after: Key | None = None) -> tuple[int, list[Record]]:
        return self._reads.records(country, indicator, first, last, offset, limit, after)

    def export(self, country: str | None = None, indicator: str | None = None, first: int | None = None,
               last: int | None = None) -> Iterator[list[Record]]:
        return self._reads.export(country, indicator, first, last)

    def facets(self, by: str, country: str | None = None, indicator: str | None = None) -> list[Facet]:
        return self._reads.facets(by, country, indicator)

    @available
    def _call(self, *command: Any) -> Any:
        """One command's reply through the shared connection."""
        return self._shared.call(*command)

    describe = available(descriptions.describe)  # through the store's shared connection
    descriptions = available(descriptions.read)

    @available
    def submit_bulk(self, records: list[Record], initial: bool = False) -> int | None:
        chunks = []
        size = self._chunk_size
        for start in range(0, len(records), size):
            chunks.append(encode_chunk(records[start:start + size]))
            let_io_run()  # encoding a large job is long work
        job, pending, held, new = self._replicated(self._enqueue, [BULK, JOBS, SIZE, REMAINING, JOB_RECORDS],
                                                   [PREFIX, int(initial), len(records), self._queue_records,
                                                    self._max_records, self._jobs_kept, *chunks])
        if not job:
            if initial:
                return None
            if pending + len(records) > self._queue_records:
                raise BulkQueueFull(pending, self._queue_records, len(records))
            raise StoreFull(held, self._max_records, new)
        if initial and len(records) > self._max_records:
            log.warning("initial data of %d records is more than the store's maximum of %d (GROWTH_MAX_RECORDS): "
                        "loaded whole; new records are refused until fewer are stored", len(records),
                        self._max_records)
        self._wake.set()
        return job

    @available
    def check_bulk_room(self, records: int) -> None:
        # lua/enqueue.lua decides again, in the same step as it queues, and judges the record cap.
        pending = int(self._shared.call("HGET", BULK, "pending") or 0)
        if pending + records > self._queue_records:
            raise BulkQueueFull(pending, self._queue_records, records)

    @available
    def needs_initial_data(self) -> bool:
        """Redis lost its data (restarted empty, flushed): no records, no job queued, and initial data
        not queued since; decided in one round trip."""
        with self._redis.pipeline(transaction=False) as pipeline:
            pipeline.get(SIZE)
            pipeline.llen(JOBS)
            pipeline.hexists(BULK, "initial")
            size, queued, initial = pipeline.execute()
        return not int(size or 0) and not queued and not initial

    @available
    def bulk_status(self) -> BulkStatus:
        fields = self._shared.call("HMGET", BULK, "latest_applied", "latest_total", "accepted", "applied",
                                     "records", "pending", "failed")
        return BulkStatus.of(*(int(field or 0) for field in fields))

    @available
    def job_status(self, job: int) -> JobStatus | None:
        reply = self._run(scripts.JOB_STATUS, [JOB_RECORDS, REMAINING], [job])
        return JobStatus(reply[0].decode(), reply[1], reply[2]) if reply else None

    def wait_idle(self, timeout: float | None = None) -> bool:
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

    def _replicated(self, script: Callable[..., Any], keys: list[str], arguments: list[Any]) -> Any:
        """A script's reply through the pool; with ``min_replicas``, once that many replicas confirmed what
        it wrote (a WAIT on the same connection), else NotReplicated."""
        if not self._min_replicas:
            return script(keys, arguments)
        with self._redis.pipeline(transaction=False) as pipeline:
            script(keys, arguments, client=pipeline)
            pipeline.wait(self._min_replicas, max(1, round(self._replica_timeout * 1000)))
            reply, confirmed = pipeline.execute()
        if confirmed < self._min_replicas:
            raise NotReplicated(confirmed, self._min_replicas, self._replica_timeout)
        return reply

    def close(self) -> None:
        self._applier.kill()
        if self._primary is not None:
            self._primary.close()
        self._persistence.close()
        self._reads.close()
        self._shared.close()
        if self._cache is not None:
            self._cache.close()
        self._redis.close()
        self._redis.connection_pool.disconnect()

    def _apply_queued_jobs(self) -> None:
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
            except Exception:  # noqa: BLE001 -- a bug; the greenlet must live on to apply later jobs once it is fixed
                self._failure_log.log(logging.ERROR, "bulk loading failed; retrying every %ss", QUEUE_POLL_SECONDS,
                                      exc_info=True)
            else:
                paused = False

    @available
    def _apply_one_chunk(self) -> bool:
        """Apply the oldest job's next chunk. False when nothing is queued, or when the chunk failed and
        is to be tried again at the next wake-up; True when there may be more to apply now."""
        outcome, *failure = self._replicated(self._apply_next_chunk,
                                             [JOBS, BULK, SIZE, COUNTRIES, REMAINING, DEAD, DEAD_ERRORS,
                                              JOB_RECORDS],
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
