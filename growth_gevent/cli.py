"""The command line: read the environment once, build the store and the app, serve."""

import logging
import os
import resource
import time

import gevent
import ujson

from .app import create_app
from .config import Config, ConfigError
from .logs import configure_logging
from .records import InvalidRecord, parse_records
from .server import listen, make_server, serve
from .snapshot import Snapshotter, SnapshotError, read_snapshot, remove_stale_temporaries
from .store import MemoryStore, StoreUnavailable
from .workers import run_workers

log = logging.getLogger("growth_gevent")
# How often a process retries initial data that could not be loaded because the store was unreachable.
DEFERRED_LOAD_RETRY_SECONDS = 1.0


def main(argv=(), environ=os.environ):
    """``python -m growth_gevent`` serves; ``python -m growth_gevent load FILE [--url URL]`` uploads."""
    if argv and argv[0] == "load":
        from .loader import main as load
        return load(argv[1:])
    configure_logging()
    try:
        config = Config.from_env(environ)
    except ConfigError as error:
        log.error("configuration error: %s", error)
        return 2
    _raise_open_file_limit()
    started = time.perf_counter()
    try:
        store = _open_store(config)
        deferred = _load_initial_data(store, config, started)
    except (SnapshotError, InvalidRecord, OSError, ValueError) as error:
        log.error("cannot start: %s", error)
        return 2
    try:
        listener = listen(config)
    except OSError as error:
        log.error("cannot listen on %s:%s: %s", config.host, config.port, error)
        return 1
    if config.workers == 1:
        return _serve(listener, store, config, deferred=deferred)
    store.close()  # each worker opens its own connections

    def serve_worker(index, stop):
        configure_logging({"worker": index})
        return _serve(listener, _open_store(config), config, stop, deferred)

    return run_workers(config.workers, serve_worker, listener, config.shutdown_timeout)


def _open_store(config):
    """The in-memory store, or Redis when GROWTH_STORE names one (a bad URL is a ValueError)."""
    if config.redis_url is None:
        return MemoryStore(chunk_size=config.bulk_chunk_records)
    from .redis_store import RedisStore  # here: importing redis-py costs 6 MiB the default does not need
    store = RedisStore(config.redis_url, config.redis_pool_size, config.redis_timeout,
                       chunk_size=config.bulk_chunk_records, verify_tls=config.redis_tls_verify)
    try:
        store.ping()
    except StoreUnavailable as error:
        log.warning("store unreachable, answering 503 until it is back: %s", error)
    return store


def _serve(listener, store, config, stop=None, deferred=None):
    """Serve until stopped; ``deferred`` is initial data still to load, once the store is reachable."""
    if deferred is not None:
        gevent.spawn(_load_when_reachable, store, *deferred)
    snapshotter = None
    if config.snapshot_path:
        snapshotter = Snapshotter(store, config.snapshot_path, config.snapshot_interval)
    return serve(make_server(create_app(store, config), config, listener), store, config, snapshotter, stop)


def _load_initial_data(store, config, started):
    """Load the initial data into an empty store before serving. Returns ``(source, records)`` when
    the store could not be reached, to be loaded once it is back; else None, so that the records
    are not kept once loaded."""
    try:
        held = store.size()
    except StoreUnavailable:
        held = 0  # not known yet: read the file, to load it when the store is back
    if held:
        log.info("GROWTH_PRELOAD %s not read: the store already holds %d records", config.preload_path, held)
        return None
    initial = _read_initial_data(config)
    if initial is None:
        return None
    try:
        _load(store, *initial, started)
    except StoreUnavailable as error:
        log.warning("%s not loaded yet: the store is unreachable (%s); it will be when the store is back, "
                    "if it is empty then", initial[0], error)
        return initial
    return None


def _read_initial_data(config):
    """``(source, records)``: the snapshot if there is one, else the preload file; or None."""
    if config.snapshot_path:
        directory = os.path.dirname(os.path.abspath(config.snapshot_path))
        if not os.access(directory, os.W_OK):
            raise OSError(f"GROWTH_SNAPSHOT {config.snapshot_path}: cannot write in {directory}")
        remove_stale_temporaries(config.snapshot_path)
        if os.path.exists(config.snapshot_path):
            return f"snapshot {config.snapshot_path}", read_snapshot(config.snapshot_path)
    if config.preload_path:
        return f"GROWTH_PRELOAD {config.preload_path}", _read_preload(config.preload_path)
    return None


def _load(store, source, records, started):
    """Queue ``records`` as initial data (the store decides whether it takes them) and wait for them."""
    if store.submit_bulk(records, initial=True) is None:
        log.info("%s not loaded: the store holds records, or a load is queued, or initial data was "
                 "loaded before", source)
    elif store.wait_idle():
        log.info("loaded %d records from %s in %.0f ms", len(records), source, (time.perf_counter() - started) * 1000)
    else:
        log.warning("%s queued (%d records); the store went away, so they will be applied when it is back",
                    source, len(records))


def _load_when_reachable(store, source, records):
    """Retry ``_load`` every DEFERRED_LOAD_RETRY_SECONDS; the store is asked its size first, so that
    nothing is encoded in vain while it is down."""
    while True:
        try:
            store.size()
            return _load(store, source, records, time.perf_counter())
        except StoreUnavailable:
            gevent.sleep(DEFERRED_LOAD_RETRY_SECONDS)
        except Exception:  # a bug: say so in our log rather than only in gevent's
            log.exception("%s not loaded", source)
            return


def _read_preload(path):
    with open(path, "rb") as preload:
        raw = preload.read()
    try:
        payload = ujson.loads(raw)
    except ValueError as error:
        raise InvalidRecord(f"GROWTH_PRELOAD {path} is not JSON: {error}") from None
    try:
        return parse_records(payload)
    except InvalidRecord as error:
        raise InvalidRecord(f"GROWTH_PRELOAD {path}: {error}") from None


def _raise_open_file_limit():
    # Every client connection is a file descriptor; 1024, a common default, is too few.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
