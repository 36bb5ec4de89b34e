"""The journal: an append-only log of the in-memory store's writes beside its snapshot (Redis's AOF).

Its format on disk (segments, framing, links, record kinds) is :mod:`.journal_format`'s, which
:mod:`.replay` reads back with. Writes are group-committed: :meth:`Journal.append` adds a record to
the pending batch without yielding; one flusher greenlet writes the batch (and fsyncs it, by the
policy) in gevent's thread pool and wakes every waiter of it; records appended meanwhile make the next
batch.
"""

import collections
import contextlib
import logging
import os
import time
import zlib
from collections.abc import Callable
from typing import Generic, TypeVar

import gevent
from gevent.event import Event

from ..core.logs import ThrottledLog
from .journal_format import SEGMENT_MAGIC, Link, Stamp, link_record, segment_numbers, segment_path

log = logging.getLogger("growth_gevent")

FSYNC_POLICIES = ("always", "everysec", "no")
ALWAYS, EVERYSEC, NO = FSYNC_POLICIES
EVERYSEC_SECONDS = 1.0
# The same failure, of the journal or of the snapshots after it, is said at most this often.
FAILURE_LOG_SECONDS = 60.0
FSYNC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# What the log undoes if a record's batch fails (a write's old value, a job, a chunk), or None: the journal
# only hands them back.
Undo = TypeVar("Undo")


class JournalFailed(Exception):
    """A record could not be written (disk full, I/O error): the writes waiting for it were undone."""


class FolderReplaced(OSError):
    """The snapshot's folder is no longer the one this process started in: what it wrote now would be where
    the next start does not look."""


class Batch(Generic[Undo]):
    """Records written together: waiters block in :meth:`wait` until the batch is written (and
    fsynced, by the policy), or failed."""

    __slots__ = ("_done", "error", "segment", "undo")

    def __init__(self) -> None:
        self._done = Event()
        self.error: str | None = None
        self.undo: list[Undo] = []  # what the store undoes if the batch fails, in the order appended
        # The segment that starts with this batch's first record, if one does: fsynced whatever the policy.
        self.segment: int | None = None

    def written(self) -> bool:
        return bool(self._done.is_set()) and self.error is None

    def wait(self) -> None:
        self._done.wait()
        if self.error is not None:
            raise JournalFailed(self.error)

    def finish(self, error: str | None = None) -> None:
        self.error = error
        self._done.set()


class Journal(Generic[Undo]):
    """Appends records to the current segment, in batches, by the fsync ``policy``.

    ``on_written()`` is called, without yielding, after each batch written. ``on_failure(error, undo)``
    is called, without yielding, when a batch cannot be written: ``undo``
    lists the undo entries of every record not yet written (that batch's and those appended since),
    oldest first; their waiters then raise :class:`JournalFailed`. Until a segment starts again
    (:meth:`rotate`), records appended are dropped: the store refuses writes meanwhile.
    """

    def __init__(self, snapshot_path: str, policy: str, on_written: Callable[[], None],
                 on_failure: Callable[[str, list[Undo]], None]) -> None:
        self.snapshot_path = snapshot_path
        self.policy = policy
        self._on_written = on_written
        self._on_failure = on_failure
        self.number: int | None = None  # of the segment that records appended now go to, once started
        self.segment_records = 0  # appended to it, its header included
        # The flusher's file, and how far it got (touched only by the flusher).
        self._descriptor: int | None = None
        self._written = 0
        self._batch_start = 0
        self._crc = 0  # of the bytes before _written: the link of the segment after it
        self._batch_start_crc = 0
        self._excess = False  # bytes of a failed batch past _written, which could not be cut yet
        self._pending: list[bytes] = []
        self._batch: Batch[Undo] = Batch()
        # (records, batch) ended by a rotation, to be written first.
        self._closed: collections.deque[tuple[list[bytes], Batch[Undo]]] = collections.deque()
        self._writing: Batch[Undo] | None = None  # the batch being written
        self._file_number = 0  # of the segment the flusher writes (segments are numbered from 1)
        self._wakeup = Event()
        self._unsynced = False
        self._last_sync = time.monotonic()
        self.failure: str | None = None  # why the last batch failed, until a segment starts again
        self.records = 0  # appended since start
        # Counts by bucket, over the last, and the sum of the seconds.
        self.fsync_histogram: list[float] = [0] * (len(FSYNC_BUCKETS) + 1) + [0.0]
        self.last_error: tuple[float, str] | None = None  # (unix time, message) of the last write or fsync that failed
        # Failures said at most once a minute each; the snapshotter says its own through it, so that the
        # snapshots failing for the same reason after it do not say it again.
        self.failure_log = ThrottledLog(1, FAILURE_LOG_SECONDS, log)
        self._flusher = None
        self.stamp: Stamp = (None, None)  # the store and the boot, in every segment's link
        self._folder = os.path.dirname(os.path.abspath(snapshot_path))
        self._folder_identity = (0, 0)  # its device and inode as this process started, checked before each batch

    def start(self, number: int, header: bytes, follows: Link, stamp: Stamp) -> None:
        """Begin segment ``number`` with ``header``, durably, before serving; ``follows``: its link, to the
        segment before it as replay left it; ``stamp``: the store's identity and this boot's id. Blocking."""
        self.stamp = stamp
        found = os.stat(self._folder)
        self._folder_identity = (found.st_dev, found.st_ino)
        self._open(number, follows)
        self._write_all(header)
        self._fsync()
        self.number = number
        self.segment_records = 1
        self._flusher = gevent.spawn(self._flush_forever)

    def append(self, record: bytes, undo: Undo) -> Batch[Undo] | None:
        """Add ``record`` to the pending batch without yielding; return that batch, or None when the
        record is dropped (after a failure, until a segment starts again)."""
        if self.failure is not None:
            return None
        self._pending.append(record)
        batch = self._batch
        batch.undo.append(undo)
        self.segment_records += 1
        self.records += 1
        self._wakeup.set()
        return batch

    def rotate(self, header_of: Callable[[int], bytes], undo: Undo) -> tuple[int, Batch[Undo]]:
        """After what is pending, start the next segment with ``header_of(number)``, without yielding;
        return its number and the batch that starts it (fsynced whatever the policy, the previous
        segment too)."""
        assert self.number is not None, "start() first"
        self.failure = None
        self.number += 1
        if self._pending:  # a batch never spans two segments: what fails in the new one fails alone
            self._closed.append((self._pending, self._batch))
            self._pending, self._batch = [], Batch()
        self._pending.append(header_of(self.number))
        self._batch.undo.append(undo)
        self._batch.segment = self.number
        self.segment_records = 1
        self._wakeup.set()
        return self.number, self._batch

    def flush(self) -> None:
        """Wait until what was appended so far is written (or failed)."""
        batch = self._batch if self._pending else self._closed[-1][1] if self._closed else self._writing
        if batch is not None:
            batch._done.wait()

    def size(self) -> int:
        """Bytes in the segments on disk, all together."""
        total = 0
        for number in segment_numbers(self.snapshot_path):
            with contextlib.suppress(FileNotFoundError):  # removed since the folder was listed
                total += os.path.getsize(segment_path(self.snapshot_path, number))
        return total

    def remove_before(self, number: int) -> None:
        """Remove the segments before ``number`` (a snapshot holds what they did). Blocking: run in a thread."""
        for old in segment_numbers(self.snapshot_path):
            if old < number:
                os.unlink(segment_path(self.snapshot_path, old))
        fsync_directory_of(self.snapshot_path)

    def close(self, remove: bool = False) -> None:
        """Stop the flusher and close the segment; ``remove``: also remove it, which holds nothing to
        replay (its header only, no job queued)."""
        if self._flusher is not None:
            self.flush()
            self._flusher.kill()
            self._flusher = None
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None
            if remove and self.number is not None:
                os.unlink(segment_path(self.snapshot_path, self.number))
                fsync_directory_of(self.snapshot_path)

    def _flush_forever(self) -> None:
        pool = gevent.get_hub().threadpool
        while True:
            timeout = max(0.0, self._last_sync + EVERYSEC_SECONDS - time.monotonic()) if self._unsynced else None
            self._wakeup.wait(timeout)
            self._wakeup.clear()
            if self._closed:
                pending, batch = self._closed.popleft()
            elif self._pending or self._unsynced:
                pending, batch, self._pending, self._batch = self._pending, self._batch, [], Batch()
            else:
                continue
            self._writing = batch
            error, fsyncs = pool.apply(self._write_batch, (pending, batch.segment))
            self._writing = None
            for seconds in fsyncs:
                self._count_fsync(seconds)
            if error is None:
                batch.finish()
                self._on_written()
            else:
                self._failed(error, batch)
            if self._closed or self._pending:  # appended before the wake-up was cleared
                self._wakeup.set()

    def _write_batch(self, pending: list[bytes], segment: int | None) -> tuple[Exception | None, list[float]]:
        """Write ``pending`` (into a new segment ``segment``, when given) and fsync by the policy: ``(error or
        None, [seconds of each fsync])``, the error rather than raised, which gevent's pool would print as
        unhandled. Runs in a thread."""
        fsyncs = []
        self._batch_start, self._batch_start_crc = self._written, self._crc
        ending = None  # the segment this batch ends, kept until the one it begins is written
        try:
            self._check_folder()
            if segment is not None:
                if self._excess:  # a segment that has a successor ends where its link says: cut what failed
                    os.ftruncate(self._file(), self._written)
                    self._excess = False
                fsyncs.append(self._fsync())
                ending = self._file(), self._file_number, self._written, self._crc
                self._open(segment, (self._file_number, self._written, self._crc))
            self._write_all(b"".join(pending))
            if pending and (segment is not None or self.policy == ALWAYS):
                fsyncs.append(self._fsync())
            elif self.policy == EVERYSEC:
                self._unsynced = True
                if time.monotonic() - self._last_sync >= EVERYSEC_SECONDS:
                    fsyncs.append(self._fsync())
            if ending is not None:
                os.close(ending[0])
            return None, fsyncs
        except Exception as error:
            if not isinstance(error, OSError):
                log.exception("journal write failed")
            if ending is None:
                self._truncate_to_batch_start()
            else:
                self._abandon_segment(*ending)
            return error, fsyncs

    def _check_folder(self) -> None:
        """FolderReplaced unless the snapshot's folder is still the one the segments are in: one moved away or
        removed (the segment's descriptor writes on into it) and made again under its name would hold none of
        this batch, nor the snapshot that follows; moved back, it is the same folder again."""
        try:
            found = os.stat(self._folder)
            identity = (found.st_dev, found.st_ino)
        except FileNotFoundError:
            identity = None
        if identity != self._folder_identity:
            raise FolderReplaced(f"the folder {self._folder} was removed or replaced since this server started: "
                                 f"nothing written now would be found by the next start; put it back where it was, and "
                                 f"writes are accepted again once a snapshot is written there")

    def _abandon_segment(self, descriptor: int, number: int, written: int, crc: int) -> None:
        """Go back to segment ``number`` after the next one failed to start: remove what was created of
        that one (nothing in it was acknowledged), so that a full disk retried does not leave a file per
        attempt, nor use up a segment number per attempt."""
        if self._file_number != number:
            os.close(self._file())
            with contextlib.suppress(OSError):
                os.unlink(segment_path(self.snapshot_path, self._file_number))
        self._descriptor, self._file_number, self._written, self._crc = descriptor, number, written, crc

    def _file(self) -> int:
        """The flusher's file: only once a segment is open."""
        assert self._descriptor is not None, "no segment open"
        return self._descriptor

    def _write_all(self, data: bytes) -> None:
        descriptor = self._file()
        view = memoryview(data)
        while view:
            written = os.write(descriptor, view)
            self._crc = zlib.crc32(view[:written], self._crc)
            view = view[written:]
            self._written += written

    def _fsync(self) -> float:
        started = time.perf_counter()
        os.fdatasync(self._file())
        self._unsynced = False
        self._last_sync = time.monotonic()
        return time.perf_counter() - started

    def _open(self, number: int, follows: Link) -> None:
        """Create segment ``number`` and begin it with the magic and its link ``follows``; the segment before
        stays open (the caller closes it)."""
        self._descriptor = os.open(segment_path(self.snapshot_path, number), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                                   0o600)
        self._file_number = number
        self._written = self._batch_start = self._crc = self._batch_start_crc = 0
        self._excess = False
        self._write_all(SEGMENT_MAGIC + link_record(follows, self.stamp))
        fsync_directory_of(self.snapshot_path)

    def _truncate_to_batch_start(self) -> None:
        # A batch that failed half-way may leave records, or part of one, that were never acknowledged:
        # cut them, so that they are not replayed. If that fails too, the next segment's start cuts them
        # (a segment that has a successor ends where the link says); meanwhile replay drops a torn tail.
        self._written, self._crc = self._batch_start, self._batch_start_crc
        try:
            os.ftruncate(self._file(), self._batch_start)
        except OSError:
            self._excess = True

    def _count_fsync(self, seconds: float) -> None:
        index = 0
        while index < len(FSYNC_BUCKETS) and seconds > FSYNC_BUCKETS[index]:
            index += 1
        self.fsync_histogram[index] += 1
        self.fsync_histogram[-1] += seconds

    def _failed(self, error: Exception, batch: Batch[Undo]) -> None:
        """Fail ``batch`` and everything appended since; the store undoes them, newest first."""
        later = [*(closed for _, closed in self._closed), self._batch]
        self._closed.clear()
        self._pending, self._batch = [], Batch()
        self.number = self._file_number  # a segment that failed to start is started again, not skipped
        self.failure = str(error)
        self.last_error = (time.time(), str(error))
        if batch.segment is None:  # a segment that failed to start is a snapshot that failed: the snapshotter says it
            self.failure_log.log(logging.ERROR, "journal write to %s failed: %s; the writes waiting for it are undone "
                                 "and answered 503, and writes are refused until a snapshot succeeds",
                                 segment_path(self.snapshot_path, self.number), error, key=self.failure)
        self._on_failure(self.failure, [entry for each in (batch, *later) for entry in each.undo])
        for each in (batch, *later):
            each.finish(self.failure)


def fsync_directory_of(path: str) -> None:
    """fsync the folder that holds ``path``: a file created, removed or renamed there is durable only
    once its folder's entry is (the journal's segments, the snapshot's rename)."""
    descriptor = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
