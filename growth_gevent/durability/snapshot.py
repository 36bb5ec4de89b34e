"""Snapshots of the in-memory store: a versioned JSON file with a checksum, written atomically, read strictly.

The file is one JSON object on a line, then a line with the CRC-32 of every byte before it::

    {"format": "growth-gevent-snapshot", "version": 3, "store": ID, "count": N, "journal": S,
     "descriptions": {"country": {"BRA": {"name": "Brazil"}}, "indicator": {}},
     "records": [["BRZ", "NGDP_R", 2002, 183.26], ...]}
    crc32 1a2b3c4d

``store``: the identity of the store it belongs to (:mod:`.identity`). ``journal``, with a journal only:
the first segment of the log that the snapshot does not hold.
``descriptions``, when there are any: what the codes stand for (core/descriptions.py); a version that does
not know the field reads the records and drops them. The
checksum is verified before a byte of the document is used, as Redis does with an RDB's CRC64: one bit
changed on disk (183.26 to 183.27) refuses the file rather than serving the change. Version 1 snapshots
have no checksum line, version 2 ones no store: they are read, with a warning, and the next snapshot written
is version 3.

It is written to a temporary file in the same folder, flushed, fsynced and renamed over the old one,
so a crash at any moment leaves either the previous snapshot or the new one, never a mix.

One process owns a snapshot path at a time (:class:`SnapshotLock`): two writing one file would
overwrite each other's snapshots, and the one that started second would remove the other's temporary
file as a stale one.
"""

import logging
import os
import re
import sys
import time
import zlib
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import gevent
import ujson
from gevent.event import Event
from gevent.lock import Semaphore

from ..core.descriptions import Description
from ..core.logs import ThrottledLog
from ..core.records import Key, Number, Record, check_name, is_finite_number
from .identity import STORE_ID, new_store_id
from .journal import Batch, JournalFailed
from .journal_format import described

# The lock and the errors, in a module of their own, named here too as they always were.
from .snapshot_lock import LOCK_SUFFIX as LOCK_SUFFIX
from .snapshot_lock import SnapshotError as SnapshotError
from .snapshot_lock import SnapshotInUse as SnapshotInUse
from .snapshot_lock import SnapshotLock as SnapshotLock
from .snapshot_lock import replaced_durably
from .snapshot_lock import temporary_path as temporary_path

Described = dict[str, dict[str, Description]]  # by -> code -> description

FORMAT = "growth-gevent-snapshot"
VERSION = 3
VERSIONS_READ = (1, 2, VERSION)
CHECKSUM_LINE = re.compile(rb"crc32 ([0-9a-f]{8})\n")  # the last line; the CRC-32 of every byte before it
ROWS_PER_WRITE = 5000
# After a failed snapshot the next is tried after RETRY_FIRST_SECONDS, doubling up to RETRY_MOST_SECONDS:
# a full disk retried at once made thousands of attempts a second. Meanwhile the free space of the
# snapshot's file system is looked at every SPACE_CHECK_SECONDS (one statvfs), and a snapshot is tried at
# once when room for one came back, so that writes come back within seconds of the space.
RETRY_FIRST_SECONDS = 1.0
RETRY_MOST_SECONDS = 30.0
SPACE_CHECK_SECONDS = 1.0
SPACE_MARGIN_BYTES = 1 << 20

log = logging.getLogger("growth_gevent")


def write_snapshot(path: str, items: list[Record], journal: int | None = None,
                   descriptions: Described | None = None, store: str | None = None) -> None:
    """Write ``[(key, value), ...]`` to ``path`` atomically, with the first ``journal`` segment it does
    not hold, if given, as the store of identity ``store`` (None: a new store's). Blocking: run it in a thread.

    The caller must own ``path`` (hold its :class:`SnapshotLock`), or know that nothing else writes it.
    """
    with replaced_durably(path) as output:
        checksum = 0

        def write(data: bytes) -> None:
            nonlocal checksum
            checksum = zlib.crc32(data, checksum)
            output.write(data)

        write(b'{"format":"%s","version":%d,"store":"%s","count":%d,%s%s"records":['
              % (FORMAT.encode(), VERSION, (store or new_store_id()).encode(), len(items),
                 b"" if journal is None else b'"journal":%d,' % journal,
                 b'"descriptions":%s,' % ujson.dumps(descriptions, ensure_ascii=False).encode()
                 if descriptions and any(descriptions.values()) else b""))
        for start in range(0, len(items), ROWS_PER_WRITE):
            rows = [[c, i, y, v] for (c, i, y), v in items[start:start + ROWS_PER_WRITE]]
            if start:
                write(b",")
            write(ujson.dumps(rows, escape_forward_slashes=False)[1:-1].encode())
        write(b"]}\n")
        output.write(b"crc32 %08x\n" % checksum)


class Loaded(NamedTuple):
    """A snapshot file as read."""

    records: list[Record]
    journal: int  # the first journal segment it does not hold (0: it names none)
    descriptions: Described  # what the codes stand for
    store: str | None  # the identity of the store it belongs to (None: an older snapshot, which names none)


def read_snapshot(path: str) -> list[Record]:
    """The ``[(key, value), ...]`` of a snapshot file, or :class:`SnapshotError`. Never changes the file."""
    return load_snapshot(path).records


def load_snapshot(path: str) -> Loaded:
    """A snapshot file's records, the first journal segment that it does not hold, its descriptions and its
    store; or :class:`SnapshotError`. Never changes the file."""
    with open(path, "rb") as snapshot:
        raw = snapshot.read()
    checked = _verified(path, raw)
    try:
        document = ujson.loads(raw if checked is None else raw[:checked])
    except ValueError:
        raise SnapshotError(f"{path} is not a complete snapshot: truncated or not JSON") from None
    if type(document) is not dict or document.get("format") != FORMAT:
        raise SnapshotError(f"{path} is not a growth-gevent snapshot")
    version = document.get("version")
    if version not in VERSIONS_READ:
        raise SnapshotError(f"{path} is snapshot version {version!r}; this version of growth-gevent reads "
                            f"versions {' and '.join(map(str, VERSIONS_READ))}")
    if checked is None and version != 1:
        raise SnapshotError(f"{path} is damaged: its checksum line is missing (cut short?). {RESTORE}")
    if checked is None:
        log.warning("%s is snapshot version 1, which has no checksum: read as it is; the next snapshot written "
                    "has one", path)
    rows = document.get("records")
    if type(rows) is not list or document.get("count") != len(rows):
        raise SnapshotError(f"{path} is damaged: its record count does not match its records")
    journal = document.get("journal", 0)
    if type(journal) is not int or journal < 0:
        raise SnapshotError(f"{path} is damaged: its journal segment is not a number")
    try:
        descriptions = _described(document.get("descriptions", {}))
    except ValueError:
        raise SnapshotError(f"{path} is damaged: its descriptions are not what growth-gevent writes") from None
    store = document.get("store")
    if version == VERSION and (type(store) is not str or not STORE_ID.fullmatch(store)):
        raise SnapshotError(f"{path} is damaged: it does not name its store")
    if version == 2:
        log.warning("%s is snapshot version 2, which names no store: read as it is; the next snapshot written "
                    "names it", path)
    return Loaded(_parse_rows(path, rows), journal, descriptions, store if version == VERSION else None)


def _described(document: object) -> Described:
    if type(document) is not dict:
        raise ValueError("not an object")
    return dict(described(by, descriptions) for by, descriptions in document.items())


RESTORE = ("It was not loaded. Restore it from a backup (`growth-gevent check PATH` verifies a copy), or "
           "move it away to start without the records it held.")


def _verified(path: str, raw: bytes) -> int | None:
    """Where the document ends, once the checksum line after it matches it; None when the file is one
    line (version 1, or a snapshot cut short); SnapshotError when the checksum does not match."""
    end = raw.rfind(b"\n", 0, len(raw) - 1) + 1
    if end == 0:
        return None
    written = CHECKSUM_LINE.fullmatch(raw, end)
    computed = zlib.crc32(memoryview(raw)[:end])
    if written is None or int(written.group(1), 16) != computed:
        raise SnapshotError(f"{path} is damaged: its checksum does not match its contents (crc32 {computed:08x}, "
                            f"the file says {raw[end:end + 20].decode(errors='replace').strip()!r}): a bit changed "
                            f"on disk, or the file was edited. {RESTORE}")
    return end


def _parse_rows(path: str, rows: list[Any]) -> list[Record]:
    """The rows as ``[(key, value), ...]``; a row that growth-gevent would not have written is damage.

    A repeated key is refused rather than counted once: snapshots are written from the store's dicts,
    so a repeat means that something else changed the file, and it is not known which value is right.
    Shared names and years, copied values: as in records.parse_records, nothing kept may pin the
    memory of the parsed document.
    """
    names: dict[str, str] = {}  # each distinct name checked once: a few hundred for 42,450 records
    years: dict[int, int] = {}
    parsed: dict[Key, Number] = {}
    for index, row in enumerate(rows):
        key = None
        if type(row) is list and len(row) == 4 and type(row[2]) is int and is_finite_number(row[3]):
            country, indicator = _stored_name(names, row[0]), _stored_name(names, row[1])
            if country is not None and indicator is not None:
                key = (country, indicator, years.setdefault(row[2], row[2]))
        if key is None:
            raise SnapshotError(f"{path} is damaged: record {index} is not [country, indicator, year, value] "
                                "with upper-case names, as growth-gevent writes them")
        if key in parsed:
            raise SnapshotError(f"{path} is damaged: record {index} repeats the country, indicator and year "
                                "of an earlier record")
        parsed[key] = row[3] * 1
    return list(parsed.items())


def _stored_name(names: dict[str, str], value: object) -> str | None:
    """``value`` interned, if a store key can hold it (keys are upper-case); else None."""
    if type(value) is not str:
        return None
    name = names.get(value)
    if name is None and not check_name("name", value) and value == value.upper():
        name = names[value] = sys.intern(value)
    return name


def _write_copy(path: str, countries: dict[str, dict[str, dict[int, Number]]], descriptions: Described,
                journal: int, store: str | None) -> int | Exception:
    """Flatten a store copy and write it; return how many records were written, or what the write
    raised: gevent's thread pool would print it on stderr as an unhandled error. Runs in a thread."""
    try:
        items = [((country, indicator, year), value)
                 for country, indicators in countries.items()
                 for indicator, series in indicators.items()
                 for year, value in series.items()]
        write_snapshot(path, items, journal, descriptions, store)
        return len(items)
    except Exception as error:
        return error


class Snapshotted(Protocol):
    """What the snapshotter asks and tells of the store's durability partner (the
    :class:`~growth_gevent.durability.journaled.JournalLog`), and of nothing else."""

    changes: int  # changes made to the store: a snapshot is written only when it grew since the last one

    @property
    def store_identity(self) -> str | None:
        """The identity of the store, which every snapshot names (:mod:`.identity`)."""

    @property
    def failure_log(self) -> ThrottledLog:
        """The journal's, so that its failure and the snapshots' that follow it are said once."""

    def on_failure(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after each failure to write the journal."""

    def needs_snapshot(self) -> bool:
        """Whether segments are left from before this process, which a snapshot would make needless."""

    def start_snapshot(self) -> tuple[dict[str, dict[str, dict[int, Number]]], Described, int, Batch[Any]]:
        """A copy of the store, its records and descriptions, and a new segment begun in the same step:
        ``(copy, descriptions, segment, batch)``."""

    def remove_before(self, segment: int) -> None:
        """Remove the segments before ``segment``. Blocking: run in a thread."""

    def snapshots_started(self, last_success: float | None) -> None:
        """Snapshots are taken from now on; the last one was written at ``last_success``, if any."""

    def snapshot_written(self, at: float) -> None:
        """The snapshot begun last is durable, written at ``at`` (unix time)."""

    def snapshot_failed(self, reason: str, refuse_writes: bool) -> None:
        """A snapshot failed for ``reason``; ``refuse_writes``: refuse writes until one succeeds."""


def _remove_segments(partner: Snapshotted, before: int) -> OSError | None:
    """Remove the journal's segments before ``before``; None, or what the removal raised. Runs in a thread."""
    try:
        partner.remove_before(before)
        return None
    except OSError as error:
        return error


class Snapshotter:
    """Writes the store every ``interval`` seconds when it changed, and once more at stop.

    The store is copied in one step (its dicts only; docs/performance.md#the-snapshots-copy), then flattened,
    serialised and written in gevent's thread pool, so requests go on being answered meanwhile.

    It talks to the store's durability partner only (:class:`Snapshotted`), which copies the store. As
    Redis does with ``stop-writes-on-bgsave-error``, a failed snapshot is reported to the partner, which
    then refuses writes when ``stop_writes_on_error`` (a write it acknowledged could not be kept), and is
    tried again every interval; writes are accepted again once one succeeds.

    The store is journaled (:class:`JournalLog`): the copy is taken in the same step as a new log segment
    begins, and the segments before it are removed once the snapshot is durable: a crash at any point
    leaves a snapshot and segments that replay to the same state. After the journal failed, a snapshot
    is tried at once: one that succeeds makes writes accepted again. Failed attempts back off
    (RETRY_FIRST_SECONDS doubling to RETRY_MOST_SECONDS), and are said once, then at most once a
    FAILURE_LOG_SECONDS, the journal's failure and the snapshot's alike.
    """

    def __init__(self, partner: Snapshotted, lock: SnapshotLock, interval: float,
                 stop_writes_on_error: bool) -> None:
        """``partner``: the durability partner of the store to write. The store must hold what the snapshot at
        ``lock.path`` holds, if there is one (it was loaded from it): it is written again only once it changes."""
        self._partner = partner
        self._lock = lock  # kept for as long as this process may write the snapshot
        self._path = lock.path
        self._interval = interval
        self._stop_writes_on_error = stop_writes_on_error
        self._saved_changes: int | None = partner.changes
        self._saving = Semaphore()
        self._stopping = Event()
        self._wakeup = Event()  # set by stop() and by a journal failure
        self._greenlet: gevent.Greenlet | None = None
        self._failures = 0  # failed attempts since the last snapshot written
        self._free_after_failure: int | None = None  # bytes free on the snapshot's file system after the last one
        # The journal's: a new error is logged at once, the same one again at most every FAILURE_LOG_SECONDS
        # (with a 1 s interval a full disk would otherwise write a line a second), and the journal's failure
        # and the snapshots' that follow it, the same error, are said once.
        self._failure_log = partner.failure_log
        partner.on_failure(self._retry_soon)
        if partner.needs_snapshot():  # what was replayed is not in the snapshot yet
            self._saved_changes = None
        partner.snapshots_started(os.path.getmtime(self._path) if os.path.exists(self._path) else None)

    def start(self) -> None:
        self._greenlet = gevent.spawn(self._run)

    def save_if_changed(self, last: bool = False) -> bool:
        """Write a snapshot when the store changed since the last one; return True if one was written.

        Raises what the write raised, after reporting it to the store and the log; ``last``: the one
        written at stop, after which nothing will be tried again."""
        with self._saving:
            changes = self._partner.changes
            if changes == self._saved_changes:
                return False
            started = time.perf_counter()
            pool = gevent.get_hub().threadpool
            countries, descriptions, segment, batch = self._partner.start_snapshot()
            try:
                batch.wait()  # what the copy holds is logged, or was undone and the copy is void
            except JournalFailed as error:
                self._failed(error, last)
                raise
            count = pool.apply(_write_copy, (self._path, countries, descriptions, segment,
                                             self._partner.store_identity))
            if isinstance(count, Exception):
                self._failed(count, last)
                raise count
            removed = pool.apply(_remove_segments, (self._partner, segment))
            if removed is not None:
                log.warning("journal segments before %d not removed (tried again at the next snapshot): %s",
                            segment, removed)
            self._saved_changes = changes
            self._partner.snapshot_written(time.time())
            milliseconds = (time.perf_counter() - started) * 1000
            if self._failures:
                log.warning("snapshot written after %d failed attempts: %d records to %s in %.0f ms%s",
                            self._failures, count, self._path, milliseconds,
                            "; writes are accepted again" if self._stop_writes_on_error else "")
            else:
                log.info("snapshot written: %d records to %s in %.0f ms", count, self._path, milliseconds)
            self._failures = 0
            self._failure_log.reset()
            return True

    def stop(self) -> None:
        """Let a snapshot in progress finish, then write the last one. Raises what that write raised."""
        self._stopping.set()
        self._wakeup.set()
        if self._greenlet is not None:
            self._greenlet.join()
        self.save_if_changed(last=True)

    def _retry_soon(self) -> None:
        # A journal failure while no snapshot is failing: try one now. One that a snapshot's own new
        # segment caused is that snapshot's failure, retried as it backs off.
        if not self._failures and not self._saving.locked():
            self._wakeup.set()

    def _run(self) -> None:
        while True:
            self._wait_for_next_attempt()
            self._wakeup.clear()
            if self._stopping.is_set():
                return
            try:
                self.save_if_changed()
            except Exception:  # reported and logged; tried again as it backs off
                self._free_after_failure = self._free_space()

    def _retry_seconds(self) -> float:
        return min(RETRY_FIRST_SECONDS * 2.0 ** (self._failures - 1), RETRY_MOST_SECONDS)

    def _wait_for_next_attempt(self) -> None:
        """Until the interval is over (the backoff, after a failure), a wake-up, or room on the disk again."""
        if not self._failures:
            self._wakeup.wait(self._interval)
            return
        deadline = time.monotonic() + self._retry_seconds()
        while not self._wakeup.wait(min(SPACE_CHECK_SECONDS, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline or self._room_came_back():
                return

    def _free_space(self) -> int | None:
        try:
            stat = os.statvfs(os.path.dirname(os.path.abspath(self._path)))
        except OSError:
            return None
        return stat.f_bavail * stat.f_frsize

    def _room_came_back(self) -> bool:
        """More free space than after the last failure, by the size of a snapshot: worth a try now."""
        free = self._free_space()
        if free is None or self._free_after_failure is None:
            return False
        try:
            needed = os.path.getsize(self._path) + SPACE_MARGIN_BYTES
        except OSError:
            needed = SPACE_MARGIN_BYTES
        return free - self._free_after_failure >= needed

    def _failed(self, error: Exception, last: bool) -> None:
        self._failures += 1
        self._partner.snapshot_failed(str(error), self._stop_writes_on_error)
        retry = (f"trying again in {self._retry_seconds():g} s, then backing off to {RETRY_MOST_SECONDS:g} s, "
                 "or as soon as the disk has room")
        if last:
            consequence = "the changes since the last snapshot written are in the journal, replayed at the next start"
            self._failure_log.reset()  # the last one is always said
        elif self._stop_writes_on_error:
            consequence = f"writes are refused (503) until a snapshot succeeds; {retry}"
        else:
            consequence = ("writes are still accepted (GROWTH_STOP_WRITES_ON_SNAPSHOT_ERROR=off) and are kept in the "
                           f"journal, which grows until a snapshot succeeds; {retry}")
        # A bug (not an OSError of the disk) gets its traceback.
        self._failure_log.log(logging.ERROR, "%s to %s failed (%d in a row): %s; %s",
                              "last snapshot" if last else "snapshot", self._path, self._failures, error,
                              consequence, exc_info=not isinstance(error, OSError), key=str(error))
