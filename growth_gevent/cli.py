"""The command line: read the environment once, build the store and the app, serve."""

import logging
import os
import resource
import time

import gevent

from .app import create_app
from .auth import warn_if_open
from .config import Config, ConfigError
from .initial_data import PreloadWatch, seed_store
from .lifecycle import serve
from .logs import configure_logging
from .records import InvalidRecord
from .server import listen, make_server
from .snapshot import SnapshotError, SnapshotLock, Snapshotter
from .stores.base import Store, StoreUnavailable
from .stores.memory import MemoryStore
from .workers import run_workers

log = logging.getLogger("growth_gevent")


def main(argv=(), environ=os.environ):
    """``python -m growth_gevent`` serves; ``python -m growth_gevent load FILE [--url URL]`` uploads."""
    if argv and argv[0] == "load":
        from .upload import main as upload
        return upload(argv[1:])
    configure_logging()
    try:
        config = Config.from_env(environ)
    except ConfigError as error:
        log.error("configuration error: %s", error)
        return 2
    warn_if_open(config)
    _raise_open_file_limit()
    started = time.perf_counter()
    try:
        snapshot_lock = _own_snapshot(config.snapshot_path) if config.snapshot_path else None
        store = open_store(config)
        deferred = seed_store(store, config, snapshot_lock, started)
    except (SnapshotError, InvalidRecord, OSError, ValueError) as error:
        log.error("cannot start: %s", error)
        return 2
    try:
        listener = listen(config)
    except OSError as error:
        log.error("cannot listen on %s:%s: %s", config.host, config.port, error)
        return 1
    if config.workers == 1:
        return _serve(listener, store, config, deferred=deferred, snapshot_lock=snapshot_lock)
    store.close()  # each worker opens its own connections

    def serve_worker(index, stop):
        configure_logging({"worker": index})
        return _serve(listener, open_store(config), config, stop, deferred)

    return run_workers(config.workers, serve_worker, listener, config.shutdown_timeout)


def open_store(config: Config) -> Store:
    """The store ``config`` describes, given its settings: the in-memory one, or Redis when GROWTH_STORE
    names one (a bad URL is a ValueError)."""
    if config.store_url is None:
        return MemoryStore(chunk_size=config.bulk_chunk_records, queue_records=config.bulk_queue_records,
                           max_records=config.max_records)
    from .stores.redis import RedisStore  # here: importing redis-py costs 6 MiB the default does not need
    store = RedisStore(config.store_url, pool_size=config.redis_pool_size, timeout=config.redis_timeout,
                       chunk_size=config.bulk_chunk_records, verify_tls=config.redis_tls_verify,
                       queue_records=config.bulk_queue_records,
                       cache_stale_seconds=config.redis_cache_stale_seconds)
    try:
        store.ping()
    except StoreUnavailable as error:
        log.warning("store unreachable, answering 503 until it is back: %s", error)
    return store


def _serve(listener, store, config, stop=None, deferred=None, snapshot_lock=None):
    """Serve until stopped; ``deferred`` is initial data still to load, once the store is reachable."""
    if config.store_url is not None and config.preload_path:
        gevent.spawn(PreloadWatch(store, config.preload_path, deferred).run)
    snapshotter = None
    if snapshot_lock is not None:
        snapshotter = Snapshotter(store, snapshot_lock, config.snapshot_interval,
                                  config.stop_writes_on_snapshot_error)
    return serve(make_server(create_app(store, config), config, listener), store, config, snapshotter, stop)


def _own_snapshot(path):
    """The lock that makes this process the snapshot's only writer (SnapshotInUse if another is)."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.access(directory, os.W_OK):
        raise OSError(f"GROWTH_SNAPSHOT {path}: cannot write in {directory}")
    return SnapshotLock(path)


def _raise_open_file_limit():
    # Every client connection is a file descriptor; 1024, a common default, is too few.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
