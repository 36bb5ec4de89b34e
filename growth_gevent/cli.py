"""The command line: read the environment once, build the store and the app, serve."""

import logging
import os
import resource
import time

import gevent
import ujson

from .app import create_app
from .auth import warn_if_open
from .config import Config, ConfigError
from .lifecycle import serve
from .logs import configure_logging
from .records import InvalidRecord, parse_records
from .server import listen, make_server
from .snapshot import SnapshotLock, Snapshotter, SnapshotError, read_snapshot
from .stores.base import StoreUnavailable
from .stores.memory import MemoryStore
from .workers import run_workers

log = logging.getLogger("growth_gevent")
# How often a process on Redis asks whether Redis lost its data (restarted empty, flushed), to load
# GROWTH_PRELOAD again; and retries initial data that found Redis unreachable. One cheap call.
INITIAL_DATA_CHECK_SECONDS = 2.0


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
        deferred = _seed_store(store, config, snapshot_lock, started)
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


def open_store(config):
    """The in-memory store, or Redis when GROWTH_STORE names one (a bad URL is a ValueError)."""
    if config.redis_url is None:
        return MemoryStore(chunk_size=config.bulk_chunk_records, queue_records=config.bulk_queue_records,
                           max_records=config.max_records)
    from .stores.redis import RedisStore  # here: importing redis-py costs 6 MiB the default does not need
    store = RedisStore(config.redis_url, config.redis_pool_size, config.redis_timeout,
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
    if config.redis_url is not None and config.preload_path:
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


def _seed_store(store, config, snapshot_lock, started):
    """Give an empty store its initial data (the snapshot, else GROWTH_PRELOAD) before serving.
    Returns ``(source, records)`` when the store could not be reached, to be loaded once it is back;
    else None, so that the records are not kept once loaded."""
    try:
        held = store.size()
    except StoreUnavailable:
        held = 0  # not known yet: read the file, to load it when the store is back
    if held:
        if config.preload_path:
            log.info("GROWTH_PRELOAD %s not read: the store already holds %d records", config.preload_path, held)
        return None
    initial = _read_initial_data(config, snapshot_lock)
    if initial is None:
        return None
    try:
        _submit_initial_data(store, *initial, started)
    except StoreUnavailable as error:
        log.warning("%s not loaded yet: the store is unreachable (%s); it will be when the store is back, "
                    "if it is empty then", initial[0], error)
        return initial
    return None


def _read_initial_data(config, snapshot_lock):
    """``(source, records)``: the snapshot if there is one, else the preload file; or None."""
    if snapshot_lock is not None and os.path.exists(snapshot_lock.path):
        return f"snapshot {snapshot_lock.path}", read_snapshot(snapshot_lock.path)
    if config.preload_path:
        return _preload(config.preload_path)
    return None


def _preload(path, pause=None):
    return f"GROWTH_PRELOAD {path}", _read_preload(path, pause)


def _submit_initial_data(store, source, records, started):
    """Queue ``records`` as initial data (the store decides whether it takes them) and wait for them."""
    if store.submit_bulk(records, initial=True) is None:
        log.info("%s not loaded: the store holds records, or a load is queued, or initial data was "
                 "loaded before", source)
    elif store.wait_idle():
        log.info("loaded %d records from %s in %.0f ms", len(records), source, (time.perf_counter() - started) * 1000)
    else:
        log.warning("%s queued (%d records); the store went away, so they will be applied when it is back",
                    source, len(records))


class PreloadWatch:
    """Loads GROWTH_PRELOAD again whenever the store lost its data, for as long as the process serves.

    Redis restarted without persistence, or flushed, holds no records, no job and no initial-data
    marker: ``store.needs_initial_data()`` says so (one round trip, every INITIAL_DATA_CHECK_SECONDS),
    and every process that notices reads the file again and submits it as initial data. The store sets
    the marker in the same step as it queues the job, so it takes the data from one of them, once; a
    store emptied by clients keeps its marker and is left empty.
    """

    def __init__(self, store, preload_path, pending=None):
        """``pending``: initial data that found the store unreachable at start-up, loaded once it is back."""
        self._store = store
        self._preload_path = preload_path
        self._pending = pending

    def run(self):
        reported = None  # the last error logged: said once, not at every check
        while True:
            try:
                self.check()
                reported = None
            except StoreUnavailable:
                pass
            except Exception as error:  # the file unreadable now, or a bug
                if repr(error) != reported:
                    reported = repr(error)
                    log.error("initial data not loaded: %s", error,
                              exc_info=not isinstance(error, (OSError, InvalidRecord)))
            gevent.sleep(INITIAL_DATA_CHECK_SECONDS)

    def check(self):
        """Look once; StoreUnavailable when the store cannot be reached, what was read kept for the next."""
        if self._pending is None and self._store.needs_initial_data():
            # Requests are being served: the validation yields between slices of records.
            self._pending = _preload(self._preload_path, pause=gevent.sleep)
            log.warning("the store holds no records and no trace of initial data: it lost its data (Redis "
                        "restarted empty, or flushed); GROWTH_PRELOAD %s read again", self._preload_path)
        if self._pending is not None:
            self._store.size()  # unreachable: raises before anything is encoded in vain
            _submit_initial_data(self._store, *self._pending, time.perf_counter())
            self._pending = None


def _read_preload(path, pause=None):
    with open(path, "rb") as preload:
        raw = preload.read()
    try:
        payload = ujson.loads(raw)
    except ValueError as error:
        raise InvalidRecord(f"GROWTH_PRELOAD {path} is not JSON: {error}") from None
    try:
        return parse_records(payload, pause)
    except InvalidRecord as error:
        raise InvalidRecord(f"GROWTH_PRELOAD {path}: {error}") from None


def _raise_open_file_limit():
    # Every client connection is a file descriptor; 1024, a common default, is too few.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
