"""The journal as the in-memory store's durability partner: a write is acknowledged once its record is in the
log; the partner also holds the write refusal, the snapshots' status and the change count, and is what the
snapshotter talks to (:class:`growth_gevent.durability.snapshot.Snapshotted`)."""

import collections
from collections.abc import Callable
from dataclasses import dataclass

from ..core.descriptions import Description
from ..core.logs import ThrottledLog
from ..core.records import Key, Number, Record
from ..stores.base import Health, JournalFigures, SnapshotStatus, WritesRefused
from ..stores.memory.reads import Indicators
from ..stores.memory.write_log import Answer, Covers, LoggedStore, WriteLog
from .identity import Identity, current_boot_id
from .journal import ALWAYS, Batch, Journal, JournalFailed
from .journal_format import applied_record, bulk_record, delete_record, describe_record, put_record, segment_record
from .replay import QueuedJob, Recovered, replay


@dataclass(frozen=True, slots=True)
class UndoWrite:
    """A write's undo: ``key`` back to ``previous`` (None: removed)."""

    key: Key
    previous: Number | None


@dataclass(frozen=True, slots=True)
class UndoChunk:
    """A bulk chunk applied, which stays applied: the writes it set are not undone over it."""

    records: list[Record]


@dataclass(frozen=True, slots=True)
class Undescribed:
    """A patch of descriptions' undo: those it replaced (``{}``: none)."""

    by: str
    previous: dict[str, Description]


# What the log undoes if a record's batch fails: a write, a job accepted (its QueuedJob), a chunk, a patch of
# descriptions; None for a segment's header.
Undo = UndoWrite | QueuedJob | UndoChunk | Undescribed | None


class JournalLog(WriteLog):
    """The memory store's writes logged (:mod:`growth_gevent.durability.journal`) before they return.

    What keeps the memory store lock-free stays true: the store applies a write and this appends its record
    in one step that does not yield; only then, outside that step, does the write wait for its batch to be
    written (and fsynced, by the policy).

    With ``fsync="always"`` a read shows only durable writes, as Redis's replies under ``appendfsync
    always`` do: it is computed at once, then waits for the batches of the writes in flight that it
    covers (a key's latest, in ``_in_flight``), so that it waits at most for the rounds already under way
    and never for writes that arrive after it. If one of those batches fails, its writes are undone before
    its waiters wake, and the read is computed again from the state after the undo (writes are refused
    from then on, so nothing new is in flight). A read that covers no write in flight does not wait. Under
    ``everysec`` and ``no`` reads do not wait: they may show writes that a power cut can still erase.

    A bulk job is logged as it is accepted and queued for the applier once its record is written, so
    that a job whose record failed was never started; each chunk applied appends a marker (``applied
    through``), which waits for nothing: the file's order puts it after every write before it.

    When a batch cannot be written its writes are undone, newest first, and writes are refused until a
    snapshot succeeds (the snapshot starts a new segment, and holds the state as it is then). A failed
    snapshot refuses writes too, with ``refuse_writes``, as Redis's ``stop-writes-on-bgsave-error``: an
    acknowledged write must not be one that cannot be saved.
    """

    def __init__(self, snapshot_path: str, fsync: str, boot_id: Callable[[], str | None] = current_boot_id) -> None:
        """``boot_id``: where this boot's id is read (tests give another)."""
        self.journal: Journal[Undo] = Journal(snapshot_path, fsync, self._queue_written_jobs, self._undo)
        self.boot = boot_id()
        self.refusal: str | None = None
        self.reads_wait = fsync == ALWAYS
        self.changes = 0  # changes made to the store, so that a snapshot can tell whether there is anything new
        self._snapshots: SnapshotStatus | None = None  # once they are taken
        self._store: LoggedStore | None = None
        # Each job given to the applier, in its order.
        self._queued: collections.deque[QueuedJob] = collections.deque()
        # The jobs logged, waiting for their batch.
        self._accepted: collections.deque[tuple[QueuedJob, Batch[Undo]]] = collections.deque()
        self._reserved = 0  # records of the jobs accepted, in the queue's room
        self._snapshot_segment: int | None = None  # that the snapshot being written begins with
        self._covered: int | None = None  # the segment that the last snapshot written begins with
        self._failure_listeners: list[Callable[[], None]] = []
        # key -> (batch, changed the size) of its latest write not yet seen durable; only under "always"
        self._in_flight: dict[Key, tuple[Batch[Undo], bool]] | None = {} if fsync == ALWAYS else None

    def attach(self, store: LoggedStore) -> None:
        self._store = store

    @property
    def store(self) -> LoggedStore:
        assert self._store is not None, "the log is attached to its store as the store is built"
        return self._store

    def on_failure(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after each failure to write the journal (the snapshotter tries a snapshot)."""
        self._failure_listeners.append(listener)

    def recover(self, first_segment: int, identity: Identity,
                descriptions: dict[str, dict[str, Description]] | None = None) -> Recovered:
        """Replay the log after the snapshot loaded (that begins with ``first_segment``, and holds
        ``descriptions``), its segments of the store ``identity`` names (a new one made if none does), queue the
        bulk jobs it left unapplied, and begin a new segment. Blocking: before serving."""
        store = self.store
        for by, described in (descriptions or {}).items():
            store.restore_descriptions(by, described)
        recovered = replay(self.journal.snapshot_path, first_segment, store, identity, self.boot)
        store.next_job = max(store.next_job, recovered.next_job)  # initial data queued before took one
        for job in recovered.queued:
            self._queue(job)
        for tail in recovered.torn:  # cut before the next segment begins: only the newest may end torn
            tail.cut()
        number = recovered.next_segment
        store_id = identity.store or identity.make()  # a new store, or files from before identities
        self.journal.start(number, self._header(number), recovered.follows, (store_id, self.boot))
        if first_segment and not recovered.segments:
            self._covered = number  # the snapshot loaded holds everything (without one, a snapshot is due)
        return recovered

    def wrote(self, key: Key, value: Number | None, previous: Number | None, sized: bool) -> None:
        self.changes += 1
        record = delete_record(key) if value is None else put_record(key, value)
        self._wait_written(key, sized, self.journal.append(record, UndoWrite(key, previous)))

    def described(self, by: str, descriptions: dict[str, Description], previous: dict[str, Description]) -> None:
        self.changes += 1
        self._wait(self.journal.append(describe_record(by, descriptions), Undescribed(by, previous)))

    def read(self, read: Callable[[], Answer], covers: Covers) -> Answer:
        """``read()``'s answer once every write in flight that ``covers(key, sized)`` is durable, those made
        while it ran too (a list query or a facet yields between slices, and may show them); read again after
        a batch failed and its writes were undone."""
        in_flight = self._in_flight
        while True:
            answer = read()
            if not in_flight:  # the common case: nothing to wait for, or a policy that never waits
                return answer
            batches = {batch for key, (batch, sized) in in_flight.items() if covers(key, sized)}
            if not batches:
                return answer
            failed = False
            for batch in batches:
                try:
                    batch.wait()
                except JournalFailed:
                    failed = True
            for key in [key for key, (batch, _) in in_flight.items() if batch in batches]:
                del in_flight[key]
            if not failed:
                return answer

    def bulk_accepted(self, number: int, records: list[Record], initial: bool) -> None:
        if initial:  # the snapshot's records, or GROWTH_PRELOAD: read again at every start, never logged
            self.store.queue_job(records, number, 0)
            self._queued.append(QueuedJob(None, 0, records))
            return
        job = QueuedJob(number, 0, records)
        batch = self.journal.append(bulk_record(number, 0, records), job)
        if batch is not None:
            self._accepted.append((job, batch))
            self._reserved += len(records)
        else:
            self.store.release_new_keys(number)
        self._wait(batch)

    def records_accepted(self) -> int:
        return self._reserved

    def chunk_applied(self, chunk: list[Record]) -> None:
        self.changes += 1
        job = self._queued[0]
        job.applied += len(chunk)
        if job.job is not None:
            self.journal.append(applied_record(job.job, job.applied), UndoChunk(chunk))
        if job.applied == job.offset + len(job.records):
            self._queued.popleft()

    # What the snapshotter asks and tells (snapshot.Snapshotted).

    @property
    def failure_log(self) -> ThrottledLog:
        return self.journal.failure_log

    @property
    def store_identity(self) -> str | None:
        return self.journal.stamp[0]

    def start_snapshot(self) -> tuple[dict[str, Indicators], dict[str, dict[str, Description]], int, Batch[Undo]]:
        """A copy of the store, its records and its descriptions, and a new segment begun in the same step:
        ``(copy, descriptions, segment, batch)``; the copy holds what the segments before that one did, once
        ``batch`` is written."""
        countries, descriptions = self.store.copy(), self.store.copy_descriptions()
        self._snapshot_segment, batch = self.journal.rotate(self._header, None)
        return countries, descriptions, self._snapshot_segment, batch

    def needs_snapshot(self) -> bool:
        """Segments of the log are left from before this process (a snapshot would make them needless), or no
        snapshot names a segment yet (a new store's first, so that a store always leaves a file)."""
        return self._covered is None

    def remove_before(self, segment: int) -> None:
        """Remove the segments before ``segment``, which a snapshot written holds. Blocking: run in a thread."""
        self.journal.remove_before(segment)

    def snapshots_started(self, last_success: float | None) -> None:
        """Snapshots are taken from now on (the last one written at ``last_success``, if any): :meth:`health`
        reports on them."""
        self._snapshots = SnapshotStatus(last_success)

    def snapshot_written(self, at: float) -> None:
        """The snapshot begun by :meth:`start_snapshot` is durable, written at ``at`` (unix time): the segments
        before its own are not needed, and writes are accepted again."""
        if self._snapshot_segment is not None:
            self._covered, self._snapshot_segment = self._snapshot_segment, None
        self._snapshots = SnapshotStatus(at)
        self.refusal = None

    def snapshot_failed(self, reason: str, refuse_writes: bool) -> None:
        """A snapshot failed for ``reason``; with ``refuse_writes``, writes are refused until one succeeds."""
        self._snapshots = SnapshotStatus(None if self._snapshots is None else self._snapshots.last_success, reason)
        if refuse_writes:
            self.refusal = f"writes are refused until a snapshot succeeds: the last snapshot failed: {reason}"

    def health(self) -> Health:
        journal = self.journal
        figures = JournalFigures(journal.records, tuple(journal.fsync_histogram), journal.last_error, journal.size)
        return Health(self.refusal, self._snapshots, journal=figures)

    def close(self) -> None:
        # A graceful stop leaves an empty log: the last snapshot holds everything, nothing is queued.
        self.journal.close(remove=self._covered == self.journal.number and self.journal.segment_records == 1
                           and not self._queued and not self._accepted)

    def _header(self, number: int) -> bytes:
        # Initial data, never logged, has no number; a job accepted was logged, so it has one.
        jobs = [(job_number, job.applied, job.remainder())
                for job in self._queued if (job_number := job.job) is not None]
        jobs += [(job_number, 0, job.records) for job, _ in self._accepted if (job_number := job.job) is not None]
        return segment_record(number, self.store.next_job, jobs)

    def _queue(self, job: QueuedJob) -> None:
        assert job.job is not None  # a job replayed or accepted was logged, so it has its number
        self.store.queue_job(job.remainder(), job.job, job.applied)
        self._queued.append(job)

    def _queue_written_jobs(self) -> None:
        """Give the applier the accepted jobs whose records are written, in the order accepted."""
        while self._accepted and self._accepted[0][1].written():
            job, _ = self._accepted.popleft()
            self._reserved -= len(job.records)
            self._queue(job)

    def _wait(self, batch: Batch[Undo] | None) -> None:
        try:
            if batch is None:
                raise JournalFailed(self.journal.failure)
            batch.wait()
        except JournalFailed as error:
            raise WritesRefused(f"the write was not acknowledged: the journal could not be written: {error}") from None

    def _wait_written(self, key: Key, sized: bool, batch: Batch[Undo] | None) -> None:
        """Wait for the batch of a write of ``key`` (``sized``: it created or removed the key), which
        reads covering ``key`` wait for meanwhile."""
        if self._in_flight is None or batch is None:
            return self._wait(batch)
        self._in_flight[key] = (batch, sized or self._in_flight.get(key, (None, False))[1])
        try:
            self._wait(batch)
        finally:
            if self._in_flight.get(key, (None,))[0] is batch:
                del self._in_flight[key]

    def _undo(self, error: str, entries: list[Undo]) -> None:
        """Undo the writes of a failed batch and of those after it, newest first, and refuse writes.

        A chunk applied among them stays applied (its job's record was written before it was queued)
        and its marker is lost: replay applies it after everything written, where it is here once the
        writes after it are undone. So a write undone restores the value before it only if no chunk
        after it set the key; if one did, that chunk's value is the one to keep."""
        store = self.store
        set_by_chunks: set[Key] = set()
        for entry in reversed(entries):
            match entry:
                case UndoWrite(key, previous):
                    if key not in set_by_chunks:
                        store.restore(key, previous)
                case QueuedJob():
                    self._accepted.pop()
                    self._reserved -= len(entry.records)
                    assert entry.job is not None  # an accepted job was logged, so it has its number
                    store.release_new_keys(entry.job)
                case UndoChunk(records):
                    set_by_chunks.update(key for key, _ in records)
                case Undescribed(by, previous):
                    store.restore_descriptions(by, previous)
        self.refusal = f"writes are refused until a snapshot succeeds: the journal could not be written: {error}"
        self.changes += 1
        for listener in self._failure_listeners:
            listener()
