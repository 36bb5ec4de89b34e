"""Snapshots of the in-memory store: a versioned JSON file, written atomically, read strictly.

The file is one JSON object::

    {"format": "growth-gevent-snapshot", "version": 1, "count": N,
     "records": [["BRZ", "NGDP_R", 2002, 183.26], ...]}

It is written to a temporary file in the same folder, flushed, fsynced and renamed over the old one,
so a crash at any moment leaves either the previous snapshot or the new one, never a mix.
"""

import logging
import os
import sys
import tempfile
import time

import gevent
import ujson
from gevent.event import Event
from gevent.lock import Semaphore

from .records import check_name, is_finite_number

FORMAT = "growth-gevent-snapshot"
VERSION = 1
ROWS_PER_WRITE = 5000
TEMPORARY_SUFFIX = ".tmp"

log = logging.getLogger("growth_gevent")


class SnapshotError(Exception):
    """A snapshot file that cannot be used; the message says why."""


def _temporary_prefix(path):
    return f".{os.path.basename(path)}."


def remove_stale_temporaries(path):
    """Remove the temporary files that a process killed while writing ``path`` left behind."""
    directory = os.path.dirname(os.path.abspath(path))
    for name in os.listdir(directory):
        if name.startswith(_temporary_prefix(path)) and name.endswith(TEMPORARY_SUFFIX):
            os.unlink(os.path.join(directory, name))


def write_snapshot(path, items):
    """Write ``[(key, value), ...]`` to ``path`` atomically. Blocking: run it in a thread."""
    directory = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(prefix=_temporary_prefix(path), suffix=TEMPORARY_SUFFIX,
                                             dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as output:
            output.write(b'{"format":"%s","version":%d,"count":%d,"records":['
                         % (FORMAT.encode(), VERSION, len(items)))
            for start in range(0, len(items), ROWS_PER_WRITE):
                rows = [[c, i, y, v] for (c, i, y), v in items[start:start + ROWS_PER_WRITE]]
                if start:
                    output.write(b",")
                output.write(ujson.dumps(rows, escape_forward_slashes=False)[1:-1].encode())
            output.write(b"]}\n")
            output.flush()
            os.fsync(output.fileno())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory):
    # The rename itself is durable only once the folder's entry is on disk.
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def read_snapshot(path):
    """The ``[(key, value), ...]`` of a snapshot file, or :class:`SnapshotError`. Never changes the file."""
    with open(path, "rb") as snapshot:
        raw = snapshot.read()
    try:
        document = ujson.loads(raw)
    except ValueError:
        raise SnapshotError(f"{path} is not a complete snapshot: truncated or not JSON") from None
    if type(document) is not dict or document.get("format") != FORMAT:
        raise SnapshotError(f"{path} is not a growth-gevent snapshot")
    if document.get("version") != VERSION:
        raise SnapshotError(f"{path} is snapshot version {document.get('version')!r}; "
                            f"this version of growth-gevent reads version {VERSION}")
    rows = document.get("records")
    if type(rows) is not list or document.get("count") != len(rows):
        raise SnapshotError(f"{path} is damaged: its record count does not match its records")
    return _parse_rows(path, rows)


def _parse_rows(path, rows):
    # Shared names and years, copied values: as in records.parse_records, nothing kept may pin the
    # memory of the parsed document.
    years = {}
    parsed = []
    for index, row in enumerate(rows):
        if (type(row) is not list or len(row) != 4 or check_name("Country", row[0])
                or check_name("Indicator", row[1]) or type(row[2]) is not int or not is_finite_number(row[3])):
            raise SnapshotError(f"{path} is damaged: record {index} is not [country, indicator, year, value]")
        country, indicator, year, value = row
        parsed.append(((sys.intern(country), sys.intern(indicator), years.setdefault(year, year)), value * 1))
    return parsed


def _write_copy(path, countries):
    """Flatten a store copy and write it; return how many records were written. Runs in a thread."""
    items = [((country, indicator, year), value)
             for country, indicators in countries.items()
             for indicator, series in indicators.items()
             for year, value in series.items()]
    write_snapshot(path, items)
    return len(items)


class Snapshotter:
    """Writes the store to ``path`` every ``interval`` seconds when it changed, and once more at stop.

    The store is copied in one step (its dicts, about 1 ms for 42,450 records), then flattened,
    serialised and written in gevent's thread pool, so requests go on being answered meanwhile.
    """

    def __init__(self, store, path, interval):
        self._store = store
        self._path = path
        self._interval = interval
        self._saved_changes = store.changes
        self._saving = Semaphore()
        self._stopping = Event()
        self._greenlet = None

    def start(self):
        self._greenlet = gevent.spawn(self._run)

    def save_if_changed(self):
        """Write a snapshot when the store changed since the last one; return True if one was written."""
        with self._saving:
            changes = self._store.changes
            if changes == self._saved_changes:
                return False
            started = time.perf_counter()
            count = gevent.get_hub().threadpool.apply(_write_copy, (self._path, self._store.copy()))
            self._saved_changes = changes
            log.info("snapshot written: %d records to %s in %.0f ms",
                     count, self._path, (time.perf_counter() - started) * 1000)
            return True

    def stop(self):
        """Let a snapshot in progress finish, then write the last one. Raises OSError if that fails."""
        self._stopping.set()
        if self._greenlet is not None:
            self._greenlet.join()
        self.save_if_changed()

    def _run(self):
        while not self._stopping.wait(self._interval):
            try:
                self.save_if_changed()
            except OSError as error:
                log.error("snapshot to %s failed, will retry: %s", self._path, error)
