"""The in-memory store's bulk loads: accepted at once, applied in order by one background greenlet, in
chunks that yield."""

from collections.abc import Callable

import gevent
from gevent.event import Event
from gevent.queue import SimpleQueue

from ...core.allocator import give_back_memory
from ...core.loop import let_io_run
from ...core.records import Record
from ..base import COMPLETE, IN_PROGRESS, JOBS_KEPT, BulkStatus, JobStatus


class _Job:
    __slots__ = ("records", "total", "applied", "done")

    def __init__(self, records: list[Record], applied: int) -> None:
        self.records: list[Record] | None = records
        self.total = applied + len(records)
        self.applied = applied
        self.done = False  # a job of no records is done only once the worker took it


class BulkApplier:
    """Applies accepted jobs with ``apply_chunk(list_of_key_value_pairs)``, oldest first.

    Between chunks the worker yields to the hub, so requests keep being answered while a large job
    is applied; a chunk is applied in one call (its cost: docs/performance.md#a-bulk-chunk-in-one-call).
    """

    def __init__(self, apply_chunk: Callable[[list[Record]], None], chunk_size: int,
                 jobs_kept: int = JOBS_KEPT) -> None:
        self._apply_chunk = apply_chunk
        self._chunk_size = chunk_size
        self._jobs_kept = jobs_kept
        self._jobs: dict[int, _Job] = {}  # job number -> _Job, the last jobs_kept numbered jobs, oldest first
        self._pending: SimpleQueue = SimpleQueue()
        self._idle = Event()
        self._idle.set()
        self._latest: _Job | None = None
        self._jobs_accepted = 0
        self._jobs_applied = 0
        self._records_accepted = 0
        self._records_applied = 0
        self._worker: gevent.Greenlet | None = None

    def submit(self, records: list[Record], number: int | None = None, applied: int = 0) -> None:
        """Queue validated ``(key, value)`` pairs. ``number``: the job's number, by which :meth:`job_status`
        reports on it (None for one not reported on: initial data); ``applied``: the job's records applied
        before these (a job recovered halfway)."""
        job = _Job(records, applied)
        if number is not None:
            jobs = self._jobs
            jobs[number] = job
            if len(jobs) > self._jobs_kept:
                del jobs[next(iter(jobs))]
        self._latest = job
        self._jobs_accepted += 1
        self._records_accepted += job.total
        self._idle.clear()
        self._pending.put(job)
        if self._worker is None:
            self._worker = gevent.spawn(self._work)

    def status(self) -> BulkStatus:
        latest = self._latest
        return BulkStatus.of(latest.applied if latest else 0, latest.total if latest else 0,
                             self._jobs_accepted, self._jobs_applied, self._records_applied, self.records_waiting())

    def job_status(self, number: int) -> JobStatus | None:
        job = self._jobs.get(number)
        if job is None:
            return None
        return JobStatus(COMPLETE if job.done else IN_PROGRESS, job.applied, job.total)

    def records_waiting(self) -> int:
        """Records accepted and not yet applied, all jobs together."""
        return self._records_accepted - self._records_applied

    def is_idle(self) -> bool:
        """Every accepted job applied; unlike ``wait_idle(0)``, never yields to other greenlets."""
        return bool(self._idle.is_set())

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every accepted job is applied; False if ``timeout`` passed first."""
        return bool(self._idle.wait(timeout))

    def close(self) -> None:
        if self._worker is not None:
            self._worker.kill()
            self._worker = None

    def _work(self) -> None:
        while True:
            self._apply(self._pending.get())
            self._jobs_applied += 1
            if self._jobs_applied == self._jobs_accepted:
                let_io_run()  # a request that waited for the apply (a status poll) first, then ~6 ms of clean-up
                if self._jobs_applied == self._jobs_accepted:  # no job accepted meanwhile
                    give_back_memory()  # what the loads took and freed (their bodies, parses, records)
                    self._idle.set()

    def _apply(self, job: _Job) -> None:
        records, job.records = job.records, None  # the job keeps its counts, not its records
        assert records is not None, "a job is applied once"
        size = self._chunk_size
        for start in range(0, len(records), size):
            chunk = records[start:start + size]
            self._apply_chunk(chunk)
            job.applied += len(chunk)
            self._records_applied += len(chunk)
            let_io_run()
        job.done = True
