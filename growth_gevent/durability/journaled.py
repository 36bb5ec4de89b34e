"""The in-memory store with a journal: a write is acknowledged once its record is in the log."""

import collections
from collections.abc import Callable
from dataclasses import replace

from ..core.records import Key, Number, Record
from ..stores.base import Check, Facet, Health, WritesRefused
from ..stores.memory import Indicators, MemoryStore
from .journal import (
    ALWAYS,
    Batch,
    Journal,
    JournalFailed,
    applied_record,
    bulk_record,
    delete_record,
    put_record,
    segment_numbers,
    segment_record,
)
from .replay import QueuedJob, Recovered, replay


class JournaledStore(MemoryStore):
    """A :class:`MemoryStore` whose writes are logged (:mod:`growth_gevent.durability.journal`) before they return.

    What keeps the memory store lock-free stays true: a write is applied and its record appended in
    one step that does not yield; only then, outside that step, does the write wait for its batch to
    be written (and fsynced, by the policy).

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
    snapshot succeeds (the snapshot starts a new segment, and holds the state as it is then).
    """

    def __init__(self, snapshot_path: str, fsync: str, **options: int) -> None:
        super().__init__(**options)
        self.journal = Journal(snapshot_path, fsync, self._queue_written_jobs, self._undo)
        # Each job given to the applier, in its order.
        self._queued: collections.deque[QueuedJob] = collections.deque()
        # The jobs logged, waiting for their batch.
        self._accepted: collections.deque[tuple[QueuedJob, Batch]] = collections.deque()
        self._reserved = 0  # records of the jobs accepted, in the queue's room
        self._snapshot_segment: int | None = None  # that the snapshot being written begins with
        self._covered: int | None = None  # the segment that the last snapshot written begins with
        # Called after a failure (the snapshotter tries again soon).
        self.on_journal_failure: Callable[[], None] | None = None
        # key -> (batch, changed the size) of its latest write not yet seen durable; only under "always"
        self._in_flight: dict[Key, tuple[Batch, bool]] | None = {} if fsync == ALWAYS else None

    def recover(self, first_segment: int) -> Recovered:
        """Replay the log after the snapshot loaded (that begins with ``first_segment``), queue the bulk
        jobs it left unapplied, and begin a new segment. Blocking: before serving."""
        recovered = replay(self.journal.snapshot_path, first_segment, self)
        self._next_job = max(self._next_job, recovered.next_job)  # initial data queued before took one
        for job in recovered.queued:
            self._queue(job)
        number = max([first_segment - 1, 0, *segment_numbers(self.journal.snapshot_path)]) + 1
        self.journal.start(number, self._header(number))
        if not recovered.segments:
            self._covered = number  # the snapshot loaded holds everything
        return recovered

    def put(self, key: Key, value: Number, check: Check | None = None) -> bool:
        previous = super().get(key)
        created = super().put(key, value, check)
        self._wait_written(key, created, self.journal.append(put_record(key, value), (key, previous)))
        return created

    def delete(self, key: Key, check: Check | None = None) -> bool:
        previous = super().get(key)
        if not super().delete(key, check):
            return False
        self._wait_written(key, True, self.journal.append(delete_record(key), (key, previous)))
        return True

    def get(self, key: Key) -> Number | None:
        if not self._in_flight or key not in self._in_flight:  # the common case: one lookup more
            return super().get(key)
        return self._durable(lambda: MemoryStore.get(self, key), lambda each, _: each == key)

    def size(self) -> int:
        if not self._in_flight:
            return super().size()
        return self._durable(super().size, lambda _, sized: sized)

    def series(self, country: str, indicator: str, first: int | None = None,
               last: int | None = None) -> list[tuple[int, Number]]:
        def read():
            return MemoryStore.series(self, country, indicator, first, last)

        def covers(key, _):
            return key[0] == country and key[1] == indicator and _within(key[2], first, last)
        return read() if not self._in_flight else self._durable(read, covers)

    def records(self, country: str | None = None, indicator: str | None = None, first: int | None = None,
                last: int | None = None, offset: int = 0, limit: int = 100,
                after: Key | None = None) -> tuple[int, list[Record]]:
        def read():
            return MemoryStore.records(self, country, indicator, first, last, offset, limit, after)

        def covers(key, _):  # every write in the filter's range: it may move the page, and it counts in the total
            return _matches(key, country, indicator, first, last)
        return read() if not self._in_flight else self._durable(read, covers)

    def _export_batch(self, country: str | None, indicator: str | None, first: int | None, last: int | None,
                      after: Key | None) -> list[Record]:
        def read():
            return MemoryStore._export_batch(self, country, indicator, first, last, after)

        def covers(key, _):  # a write after the batches sent, in the filter's range: it may be in this one
            return _matches(key, country, indicator, first, last) and (after is None or key > after)
        return read() if not self._in_flight else self._durable(read, covers)

    def facets(self, by: str, country: str | None = None, indicator: str | None = None) -> list[Facet]:
        def read():
            return MemoryStore.facets(self, by, country, indicator)

        def covers(key, sized):  # a record created or removed: a value replaced changes no count, no range
            return sized and _matches(key, country, indicator)
        return read() if not self._in_flight else self._durable(read, covers)

    def submit_bulk(self, records: list[Record], initial: bool = False) -> int | None:
        if initial:  # the snapshot's records, or GROWTH_PRELOAD: read again at every start, never logged
            number = super().submit_bulk(records, initial=True)
            if number is not None:
                self._queued.append(QueuedJob(None, 0, records))
            return number
        self.check_bulk_room(len(records))
        number = self._next_job
        job = QueuedJob(number, 0, records)
        self._reserve_new_keys(records, job)
        self._next_job += 1
        batch = self.journal.append(bulk_record(number, 0, records), job)
        if batch is not None:
            self._accepted.append((job, batch))
            self._reserved += len(records)
        else:
            self._release_new_keys(job)
        self._wait(batch)
        return number  # the journal's number: a handle that stays true across restarts

    def check_bulk_room(self, records: int) -> None:
        super().check_bulk_room(records + self._reserved)

    def start_snapshot(self) -> tuple[dict[str, Indicators], int, Batch]:
        """A copy of the store, and a new segment begun in the same step: ``(copy, segment, batch)``;
        the copy holds what the segments before that one did, once ``batch`` is written."""
        countries = self.copy()
        self._snapshot_segment, batch = self.journal.rotate(self._header)
        return countries, self._snapshot_segment, batch

    def needs_snapshot(self) -> bool:
        """Segments of the log are left from before this process: a snapshot would make them needless."""
        return self._covered is None

    def snapshot_succeeded(self, at: float) -> None:
        super().snapshot_succeeded(at)
        if self._snapshot_segment is not None:
            self._covered, self._snapshot_segment = self._snapshot_segment, None

    def health(self) -> Health:
        return replace(super().health(), journal=self.journal)

    def close(self) -> None:
        super().close()
        # A graceful stop leaves an empty log: the last snapshot holds everything, nothing is queued.
        self.journal.close(remove=self._covered == self.journal.number and self.journal.segment_records == 1
                           and not self._queued and not self._accepted)

    def restore(self, key: Key, value: Number | None) -> None:
        """Set ``key`` to ``value``, or remove it (None), as replay and undo do: not logged, not refused."""
        if value is None:
            self._remove(key)
        else:
            MemoryStore._apply_chunk(self, [(key, value)])

    def apply_records(self, records: list[Record]) -> None:
        MemoryStore._apply_chunk(self, records)

    def _apply_chunk(self, chunk: list[Record]) -> None:
        super()._apply_chunk(chunk)
        job = self._queued[0]
        job.applied += len(chunk)
        if job.job is not None:
            self.journal.append(applied_record(job.job, job.applied), chunk)
        if job.applied == job.offset + len(job.records):
            self._queued.popleft()

    def _header(self, number):
        # Initial data, never logged, has no number; a job accepted was logged, so it has one.
        jobs = [(job_number, job.applied, job.remainder())
                for job in self._queued if (job_number := job.job) is not None]
        jobs += [(job_number, 0, job.records) for job, _ in self._accepted if (job_number := job.job) is not None]
        return segment_record(number, self._next_job, jobs)

    def _queue(self, job):
        self._bulk.submit(job.remainder(), job.job, job.applied)
        self._queued.append(job)

    def _queue_written_jobs(self):
        """Give the applier the accepted jobs whose records are written, in the order accepted."""
        while self._accepted and self._accepted[0][1].written():
            job, _ = self._accepted.popleft()
            self._reserved -= len(job.records)
            self._queue(job)

    def _wait(self, batch):
        try:
            if batch is None:
                raise JournalFailed(self.journal.failure)
            batch.wait()
        except JournalFailed as error:
            raise WritesRefused(f"the write was not acknowledged: the journal could not be written: {error}") from None

    def _wait_written(self, key, sized, batch):
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

    def _durable(self, read, covers):
        """``read()``'s answer once every write in flight that ``covers(key, sized)`` is durable; read
        again after a batch failed and its writes were undone."""
        in_flight = self._in_flight
        assert in_flight is not None  # only reads under "always" wait, and it keeps them
        while True:
            batches = {batch for key, (batch, sized) in in_flight.items() if covers(key, sized)}
            answer = read()
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

    def _undo(self, error, entries):
        """Undo the writes of a failed batch and of those after it, newest first, and refuse writes.

        A chunk applied among them stays applied (its job's record was written before it was queued)
        and its marker is lost: replay applies it after everything written, where it is here once the
        writes after it are undone. So a write undone restores the value before it only if no chunk
        after it set the key; if one did, that chunk's value is the one to keep."""
        self._refusal = f"writes are refused until a snapshot succeeds: the journal could not be written: {error}"
        set_by_chunks: set[Key] = set()
        for entry in reversed(entries):
            if type(entry) is tuple:
                key, previous = entry
                if key not in set_by_chunks:
                    self.restore(key, previous)
            elif type(entry) is QueuedJob:
                self._accepted.pop()
                self._reserved -= len(entry.records)
                self._release_new_keys(entry)
            elif entry is not None:
                set_by_chunks.update(key for key, _ in entry)
        self.changes += 1
        if self.on_journal_failure is not None:
            self.on_journal_failure()


def _matches(key, country, indicator, first=None, last=None):
    """Whether ``key`` is one that a read of these filters (None: any) covers."""
    return ((country is None or key[0] == country) and (indicator is None or key[1] == indicator)
            and _within(key[2], first, last))


def _within(year, first, last):
    return (first is None or year >= first) and (last is None or year <= last)
