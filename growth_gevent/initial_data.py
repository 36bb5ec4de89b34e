"""Initial data: what a store is given before serving (the journaled store: its snapshot and journal, else
GROWTH_PRELOAD; another: GROWTH_PRELOAD when it is empty), and, on Redis, GROWTH_PRELOAD again whenever the
store lost its data while the service ran."""

import logging
import os
import time
from collections.abc import Callable
from typing import Protocol

import gevent
import ujson

from .config import Config
from .core.descriptions import Description
from .core.logs import ThrottledLog
from .core.records import InvalidRecord, Record, parse_records
from .durability.identity import Identity, IdentityError, marker_path, read_marker, store_gone, write_marker
from .durability.journal_format import SEGMENT_INFIX, segment_numbers
from .durability.replay import Recovered
from .durability.snapshot import SnapshotLock, load_snapshot
from .stores.base import Store, StoreUnavailable

log = logging.getLogger("growth_gevent")
# How often a process on Redis asks whether Redis lost its data (restarted empty, flushed), to load
# GROWTH_PRELOAD again; and retries initial data that found Redis unreachable. One cheap call.
INITIAL_DATA_CHECK_SECONDS = 2.0
# The same error of the watch is logged at most this often; a new one, or one after a success, at once.
WATCH_ERROR_LOG_SECONDS = 60.0
# Where initial data was read (a line of the log), and its records.
InitialData = tuple[str, list[Record]]
Described = dict[str, dict[str, Description]]  # a snapshot's descriptions, by -> code -> description


class Recovering(Protocol):
    """The journal's write log as start-up sees it: it replays what the journal holds after the snapshot."""

    def recover(self, first_segment: int, identity: Identity, descriptions: Described | None = None) -> Recovered: ...


def seed_store(store: Store, config: Config, started: float) -> InitialData | None:
    """Give an empty store its initial data (GROWTH_PRELOAD) before serving.
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
    if not config.preload_path:
        return None
    initial = _preload(config.preload_path)
    try:
        submit_initial_data(store, *initial, started)
    except StoreUnavailable as error:
        log.warning("%s not loaded yet: the store is unreachable (%s); it will be when the store is back, "
                    "if it is empty then", initial[0], error)
        return initial
    return None


def recover_journaled(store: Store, journal_log: Recovering, config: Config, snapshot_lock: SnapshotLock | None,
                      started: float) -> None:
    """A journaled store's start: the snapshot (else GROWTH_PRELOAD), then ``journal_log`` replays the journal
    after it; every file must name the store that the marker beside them names (IdentityError)."""
    assert snapshot_lock is not None, "GROWTH_SNAPSHOT gives the journal and the snapshot's lock together"
    path = snapshot_lock.path
    gone = store_gone(path, lock_file_found=not snapshot_lock.created)
    if gone is not None:
        raise IdentityError(gone)
    new = not os.path.exists(path) and not segment_numbers(path)
    identity = Identity()
    identity.claim(marker_path(path), read_marker(path))
    first_segment, descriptions = 0, None
    if os.path.exists(path):
        records, first_segment, descriptions, store_id = load_snapshot(path)
        identity.claim(path, store_id)
        submit_initial_data(store, f"snapshot {path}", records, started)
    elif config.preload_path:
        submit_initial_data(store, *_preload(config.preload_path), started)
    replay_started = time.perf_counter()
    recovered = journal_log.recover(first_segment, identity, descriptions)
    if new:
        log.info("new store at %s (store %s)", path, identity.store)
    elif identity.named_by is None:
        log.info("store %s at %s: its files name no store (an older format); this identity is written in %s "
                 "and in every file from now on", identity.store, path, marker_path(path))
    assert identity.store is not None  # the recovery made one if no file named it
    if identity.named_by != marker_path(path):
        write_marker(path, identity.store)
    for torn in recovered.torn:
        log.warning("%s ends in %s: cut from the file, %s", torn.path, torn.what(), torn.dropped(config.fsync))
    if recovered.segments:
        segments = "-".join(map(str, dict.fromkeys([recovered.segments[0], recovered.segments[-1]])))
        log.info("replayed %d journal records of %s%s%s in %.0f ms; %d bulk loads queued again", recovered.records,
                 snapshot_lock.path, SEGMENT_INFIX, segments, (time.perf_counter() - replay_started) * 1000,
                 len(recovered.queued))


def _preload(path: str, pause: Callable[[], object] | None = None) -> InitialData:
    return f"GROWTH_PRELOAD {path}", read_preload(path, pause)


def submit_initial_data(store: Store, source: str, records: list[Record], started: float) -> None:
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

    def __init__(self, store: Store, preload_path: str, pending: InitialData | None = None) -> None:
        """``pending``: initial data that found the store unreachable at start-up, loaded once it is back."""
        self._store = store
        self._preload_path = preload_path
        self._pending = pending
        self._errors = ThrottledLog(1, WATCH_ERROR_LOG_SECONDS, log)

    def run(self) -> None:
        while True:
            self.check_and_report()
            gevent.sleep(INITIAL_DATA_CHECK_SECONDS)

    def check_and_report(self) -> None:
        """:meth:`check`, its errors logged: an unreachable store is not one (the store's own log says it)."""
        try:
            self.check()
            self._errors.reset()
        except StoreUnavailable:
            pass
        except Exception as error:  # the file unreadable now, or a bug
            self._errors.log(logging.ERROR, "initial data not loaded: %s", error,
                             exc_info=not isinstance(error, (OSError, InvalidRecord)), key=repr(error))

    def check(self) -> None:
        """Look once; StoreUnavailable when the store cannot be reached, what was read kept for the next."""
        if self._pending is None and self._store.needs_initial_data():
            # Requests are being served: the validation yields between slices of records.
            self._pending = _preload(self._preload_path, pause=gevent.sleep)
            log.warning("the store holds no records and no trace of initial data: it lost its data (Redis "
                        "restarted empty, or flushed); GROWTH_PRELOAD %s read again", self._preload_path)
        if self._pending is not None:
            self._store.size()  # unreachable: raises before anything is encoded in vain
            submit_initial_data(self._store, *self._pending, time.perf_counter())
            self._pending = None


def read_preload(path: str, pause: Callable[[], object] | None = None) -> list[Record]:
    """The records of the preload file at ``path``; InvalidRecord, naming it, when they are not valid."""
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
