"""The composition root: ``build(config)`` opens the store (chosen by name from :data:`STORES`), gives it its
data (the snapshot and journal, or GROWTH_PRELOAD), and binds the port; :meth:`Service.run` serves until a
stop signal, on one process or several workers, and shuts down. Nothing else puts the service together: the
command line parses and calls these, as uvicorn's ``Config`` and ``Server`` and datasette's ``Datasette`` do.

Adding a store is one opener here and one name in :data:`STORES`; the rest of the code reaches a store only
through :class:`~growth_gevent.stores.base.Store`. With GROWTH_SNAPSHOT the memory store is given the journal
as its write log (:class:`~growth_gevent.durability.journaled.JournalLog`), which start-up replays and the
snapshotter rotates."""

import logging
import os
import resource
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

import gevent
from gevent.event import Event

from .api.app import create_app
from .api.auth import warn_if_open
from .config import Config
from .core.allocator import freeze_start_up
from .core.logs import configure_logging
from .core.records import InvalidRecord
from .durability.identity import IdentityError
from .durability.journaled import JournalLog
from .durability.replay import JournalDamaged
from .durability.snapshot import SnapshotError, SnapshotLock, Snapshotter
from .http.server import listen, make_server
from .initial_data import InitialData, PreloadWatch, recover_journaled, seed_store
from .ops.lifecycle import serve
from .ops.workers import run_workers
from .stores.base import Store, StoreUnavailable
from .stores.memory import MemoryStore
from .stores.memory.write_log import WriteLog

log = logging.getLogger("growth_gevent")


class StartError(Exception):
    """The service cannot start as configured (exit code 2): the message says why."""


def open_memory_store(config: Config, write_log: WriteLog | None) -> Store:
    """The in-memory store, its writes given to ``write_log`` (the journal, with GROWTH_SNAPSHOT) if any."""
    return MemoryStore(chunk_size=config.bulk_chunk_records, queue_records=config.bulk_queue_records,
                       max_records=config.max_records, write_log=write_log)


def open_redis_store(config: Config, write_log: WriteLog | None, sentinel: bool = False) -> Store:
    """The Redis store at GROWTH_STORE's URL (``sentinel``: a Sentinel URL, for the primary the Sentinels
    name); an unreachable Redis is logged, not fatal (503 until it is back). Redis keeps its own writes: the
    settings allow no journal with it."""
    from .stores.redis import RedisStore  # here: importing redis-py costs memory the default does not need
    assert config.store_url is not None and write_log is None
    store = RedisStore(config.store_url, pool_size=config.redis_pool_size, timeout=config.redis_timeout,
                       chunk_size=config.bulk_chunk_records, verify_tls=config.redis_tls_verify,
                       queue_records=config.bulk_queue_records, max_records=config.max_records,
                       cache_stale_seconds=config.redis_cache_stale_seconds,
                       min_replicas=config.redis_min_replicas, replica_timeout=config.redis_replica_timeout,
                       sentinel=sentinel)
    try:
        store.ping()
    except StoreUnavailable as error:
        log.warning("store unreachable, answering 503 until it is back: %s", error)
    return store


def open_sentinel_store(config: Config, write_log: WriteLog | None) -> Store:
    """The Redis primary that the Sentinels of GROWTH_STORE's URL name."""
    return open_redis_store(config, write_log, sentinel=True)


# Each store by the scheme of GROWTH_STORE's URL ("memory" when it names none), as gunicorn's
# SUPPORTED_WORKERS and redis-py's URL schemes choose by name: the one place that tells schemes apart, each
# entry passing its opener what the scheme says (the stores take no URL scheme for a choice).
STORES: dict[str, Callable[[Config, WriteLog | None], Store]] = {
    "memory": open_memory_store,
    "redis": open_redis_store,
    "rediss": open_redis_store,
    "unix": open_redis_store,
    "redis+sentinel": open_sentinel_store,
    "rediss+sentinel": open_sentinel_store,
}


def store_name(config: Config) -> str:
    """The name in :data:`STORES` of the store ``config`` describes."""
    return "memory" if config.store_url is None else config.store_url.partition("://")[0].lower()


def open_store(config: Config, write_log: WriteLog | None = None) -> Store:
    """The store ``config`` describes, opened (a bad URL is a ValueError), its writes given to ``write_log``."""
    opener = STORES.get(store_name(config))
    if opener is None:
        *schemes, last = [name for name in STORES if name != "memory"]
        raise ValueError(f"GROWTH_STORE must be memory, redis or a URL of scheme {', '.join(schemes)} or {last}, "
                         f"got {config.store_url!r}")
    return opener(config, write_log)


@dataclass
class Service:
    """What :func:`build` put together: serve it with :meth:`run`."""

    config: Config
    store: Store
    listener: socket.socket  # the bound socket, shared by the workers when there are several
    snapshot_lock: SnapshotLock | None = None
    journal_log: JournalLog | None = None  # the memory store's, with GROWTH_SNAPSHOT
    # Initial data that found the store unreachable at start-up, loaded once it is back.
    deferred: InitialData | None = None

    def run(self) -> int:
        """Serve until stopped; the exit code."""
        freeze_start_up()
        if self.config.workers == 1:
            return self._serve(self.store, None, self.deferred)
        self.store.close()  # each worker opens its own connections

        def serve_worker(index: int, stop: Event) -> int:
            configure_logging({"worker": index})
            return self._serve(open_store(self.config), stop, self.deferred)

        return run_workers(self.config.workers, serve_worker, self.listener, self.config.shutdown_timeout)

    def _serve(self, store: Store, stop: Event | None, deferred: InitialData | None) -> int:
        config = self.config
        if config.store_url is not None and config.preload_path:
            gevent.spawn(PreloadWatch(store, config.preload_path, deferred).run)
        snapshotter = None
        if self.journal_log is not None and self.snapshot_lock is not None:  # GROWTH_SNAPSHOT gives both
            snapshotter = Snapshotter(self.journal_log, self.snapshot_lock, config.snapshot_interval,
                                      config.stop_writes_on_snapshot_error)
        server = make_server(create_app(store, config), config, self.listener)
        return serve(server, store, config.shutdown_timeout, snapshotter, stop)


def build(config: Config) -> Service:
    """Open the store, give it its data and bind the port; StartError (exit 2) or OSError naming the
    address (exit 1) when that cannot be done."""
    warn_if_open(config)
    _raise_open_file_limit()
    started = time.perf_counter()
    try:
        snapshot_lock = journal_log = None
        if config.snapshot_path:  # the memory store's journal: the settings allow it with no other store
            snapshot_lock = _own_snapshot(config.snapshot_path)
            journal_log = JournalLog(config.snapshot_path, config.fsync)
        store = open_store(config, journal_log)
        deferred = None
        if journal_log is not None:
            recover_journaled(store, journal_log, config, snapshot_lock, started)
        else:
            deferred = seed_store(store, config, started)
    except (SnapshotError, JournalDamaged, IdentityError, InvalidRecord, OSError, ValueError) as error:
        if snapshot_lock is not None:
            snapshot_lock.abandon()
        raise StartError(str(error)) from error
    try:
        listener = listen(config)
    except OSError as error:
        store.close()
        raise OSError(f"cannot listen on {config.host}:{config.port}: {error}") from error
    return Service(config, store, listener, snapshot_lock, journal_log, deferred)


def _own_snapshot(path: str) -> SnapshotLock:
    """The lock that makes this process the snapshot's only writer (SnapshotInUse if another is)."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.access(directory, os.W_OK):
        raise OSError(f"GROWTH_SNAPSHOT {path}: cannot write in {directory}")
    return SnapshotLock(path)


def _raise_open_file_limit() -> None:
    # Every client connection is a file descriptor; 1024, a common default, is too few.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
