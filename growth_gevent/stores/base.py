"""The store contract: what the resources need of a store, the errors it raises, the bulk status it reports.

Keys are ``(COUNTRY, INDICATOR, year)`` tuples from :func:`growth_gevent.core.records.make_key`; values are
finite JSON numbers. A store knows nothing of HTTP.
"""

import abc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import ClassVar

from ..core.descriptions import Description, Patch
from ..core.records import Key, Number, Record

# Records an export reads at a time: what one connection holds of them (a JSON page's worth, ~70 kB).
EXPORT_BATCH_RECORDS = 250
# What facets() counts by: COUNTRY or INDICATOR, the kinds of code a description names (core.descriptions).
# A facet: a name, its records, its first and last year.
Facet = tuple[str, int, int, int]

IDLE = "idle"
IN_PROGRESS = "in progress"
COMPLETE = "complete"
FAILED = "failed"
# Bulk jobs that job_status() reports on: the last this many accepted; older ones are forgotten.
JOBS_KEPT = 1000

# A write's precondition: called with the value the write would replace (None: no record), it raises to
# refuse the write.
Check = Callable[[Number | None], object]


@dataclass(frozen=True)
class BulkStatus:
    """Where bulk loading stands. ``applied``/``total`` are those of the most recently accepted job."""

    state: str
    applied: int
    total: int
    jobs_accepted: int
    jobs_applied: int
    records_applied: int = 0  # by every job since start
    records_waiting: int = 0  # accepted and not yet applied, all jobs together: what the queue limit bounds
    jobs_failed: int = 0  # given up on (Redis: moved to the dead-letter key); not counted in jobs_applied

    @classmethod
    def of(cls, applied: int, total: int, jobs_accepted: int, jobs_applied: int, records_applied: int,
           records_waiting: int = 0, jobs_failed: int = 0) -> "BulkStatus":
        """The status these counts describe: idle before any job, complete once every job is applied
        or given up on."""
        if not jobs_accepted:
            return cls(IDLE, 0, 0, 0, 0)
        state = COMPLETE if jobs_applied + jobs_failed == jobs_accepted else IN_PROGRESS
        return cls(state, applied, total, jobs_accepted, jobs_applied, records_applied, records_waiting,
                   jobs_failed)


@dataclass(frozen=True)
class JobStatus:
    """Where one bulk job stands: IN_PROGRESS, COMPLETE or FAILED (given up on), and its records applied
    of its total."""

    state: str
    applied: int
    total: int


def add_to_facet(totals: dict[str, list[int]], name: str, records: int, first: int, last: int) -> None:
    """Count ``records`` from year ``first`` to ``last`` in ``name``'s facet (``totals``: name -> [records,
    first year, last year])."""
    counts = totals.get(name)
    if counts is None:
        totals[name] = [records, first, last]
    else:
        counts[0] += records
        counts[1] = min(counts[1], first)
        counts[2] = max(counts[2], last)


def facet_list(totals: dict[str, list[int]]) -> list[Facet]:
    """The facets ``totals`` counts, in code point order of their names."""
    return [(name, records, first, last) for name, (records, first, last) in sorted(totals.items())]


class StoreUnavailable(Exception):
    """The store cannot be reached now (a network store that is down); worth retrying later."""


class BulkQueueFull(Exception):
    """A bulk job was refused, nothing queued: with its ``records`` (at most: before a body is parsed they
    are estimated from above), the records accepted and not yet applied would pass the queue's limit.
    Worth retrying once the queue has drained."""

    def __init__(self, pending: int, limit: int, records: int):
        super().__init__(f"bulk queue is full: {pending} records waiting to be applied and this load holds up to "
                         f"{records} (limit {limit})")
        self.pending = pending
        self.limit = limit
        self.records = records


class StoreFull(Exception):
    """The store holds its maximum of records (``max_records``): a new key, or a bulk job whose new keys
    (``records``) would take it past it, is refused, nothing stored or queued. ``held`` counts the
    records stored and the new keys of the bulk jobs accepted and not yet applied, each key once.
    Replacing a stored record always works; initial data is exempt."""

    def __init__(self, held: int, limit: int, records: int):
        super().__init__(f"the store is full: it holds at most {limit} records, {held} are stored or to be added "
                         f"by loads waiting to be applied, and this write would add {records}")
        self.held, self.limit, self.records = held, limit, records


class WritesRefused(Exception):
    """The store refuses writes for now (a write it acknowledged could not be made durable); the
    message says why."""


@dataclass(frozen=True)
class JournalFigures:
    """What a write log tells of itself, for /metrics (:class:`growth_gevent.durability.journal.Journal`'s)."""

    records: int  # appended since start
    fsync_histogram: tuple[float, ...]  # counts by bucket of FSYNC_BUCKETS, the sum of the durations last
    last_error: tuple[float, str] | None  # (unix time, error) of the last write or fsync that failed
    # the bytes of the log on disk, read when asked: /metrics does, /ready and the status route do not
    size_bytes: Callable[[], int]


@dataclass(frozen=True)
class SnapshotStatus:
    """How the snapshots fare, once they are taken."""

    last_success: float | None = None  # unix time of the last snapshot written, None before the first
    error: str | None = None  # why the last one failed, None once one succeeds


@dataclass(frozen=True)
class Health:
    """What a store says of itself: what ``/ready``, ``/metrics`` and the bulk status route report."""

    # Why writes are refused (:class:`WritesRefused`), or None when they are accepted.
    writes_refused: str | None = None
    # None: the store takes no snapshots.
    snapshots: SnapshotStatus | None = None
    # Times the store was found without its data (a Redis restarted empty, flushed); None: cannot tell.
    data_losses: int | None = None
    # The store's write log, when it keeps one.
    journal: JournalFigures | None = None


class Store(abc.ABC):
    """What the resources need of a store, whatever holds the data."""

    name: ClassVar[str]  # what it is called in /metrics' build info: "memory", "redis"

    @abc.abstractmethod
    def get(self, key: Key) -> Number | None:
        """The value stored under ``key``, or None."""

    @abc.abstractmethod
    def put(self, key: Key, value: Number, check: Check | None = None) -> bool:
        """Store ``value``; return True when the key is new, False when a value was replaced.

        ``check``, when given, is called with the value stored under ``key`` (None when there is none) in
        the same step as the write, so that nothing comes between them (across workers too): if it raises,
        nothing is written and its exception propagates. It must not yield.

        A key that is neither stored nor to be added by a bulk job waiting raises :class:`StoreFull` when
        the records stored and those such jobs add reach ``max_records``."""

    @abc.abstractmethod
    def delete(self, key: Key, check: Check | None = None) -> bool:
        """Remove ``key``; return False when it was absent. ``check`` as for :meth:`put`."""

    @abc.abstractmethod
    def size(self) -> int:
        """How many records are stored."""

    @abc.abstractmethod
    def series(self, country: str, indicator: str, first: int | None = None,
               last: int | None = None) -> list[tuple[int, Number]]:
        """``[(year, value), ...]`` of one series, by year, ``first <= year <= last`` where given."""

    @abc.abstractmethod
    def records(self, country: str | None = None, indicator: str | None = None, first: int | None = None,
                last: int | None = None, offset: int = 0, limit: int = 100,
                after: Key | None = None) -> tuple[int, list[Record]]:
        """``(total, [(key, value), ...])``: how many records match, and one page of them.

        Records are ordered by country, indicator (code point order) and year (as a number); ``None``
        matches everything. ``after``, a key, starts the page strictly after it (``offset`` then counts
        from there), at about the cost of a first page, however deep; ``total`` still counts every match.
        """

    @abc.abstractmethod
    def export(self, country: str | None = None, indicator: str | None = None, first: int | None = None,
               last: int | None = None) -> Iterator[list[Record]]:
        """Every record that :meth:`records` would count, in its order, in batches of at most
        EXPORT_BATCH_RECORDS, none empty, each read when it is asked for: what one holds is bounded whatever
        the store's size. Each batch starts after the last key of the one before, so a write shows in it
        if it was made before it was read and sorts after that key (a cursor's paging, without the total)."""

    @abc.abstractmethod
    def facets(self, by: str, country: str | None = None, indicator: str | None = None) -> list[Facet]:
        """``[(name, records, first year, last year), ...]`` of every country (``by`` COUNTRY) or indicator
        (INDICATOR) that has records, in code point order, of the records of ``country`` and ``indicator``
        where given. From what the store keeps per series (its count, its year range once known), not by
        reading its records."""

    @abc.abstractmethod
    def describe(self, by: str, patch: Patch) -> None:
        """Merge ``patch`` (core/descriptions.py, checked) into the descriptions of ``by``'s codes (COUNTRY or
        INDICATOR), all of it or nothing (``TooMany``), kept as durably as a record; refused as other writes are
        (:class:`WritesRefused`)."""

    @abc.abstractmethod
    def descriptions(self, by: str) -> dict[str, Description]:
        """Every description of ``by``'s codes: code -> {field: text}; the caller must not change it."""

    @abc.abstractmethod
    def submit_bulk(self, records: list[Record], initial: bool = False) -> int | None:
        """Accept validated ``(key, value)`` pairs to be applied in the background; return the job's number,
        by which :meth:`job_status` reports on it.

        The queue is bounded by the store's ``queue_records``: when the records accepted and not yet
        applied (every job's, every process's), plus these, would exceed it, nothing is queued and
        :class:`BulkQueueFull` is raised with that pending count and the limit. A job larger than the
        limit alone is refused even by an empty queue; callers keep jobs below it. The record cap is
        judged on keys, when the job is accepted: its new keys are those neither stored nor added by a
        job accepted before it, each counted once; when the records stored, plus the new keys of the jobs
        waiting, plus this job's, would exceed ``max_records``, :class:`StoreFull` is raised and nothing
        is queued. A job that only replaces stored records is never refused for the cap.

        ``initial``: the records are initial data (a snapshot, GROWTH_PRELOAD), queued only into a
        store that holds no records, has no job pending and was never given initial data, decided in
        one step, so that of processes starting together one loads them, once; else None. Initial
        data is exempt from the queue's limit (a snapshot may be larger), from ``max_records`` (logged
        when it passes it) and from a write refusal.
        """

    @abc.abstractmethod
    def check_bulk_room(self, records: int) -> None:
        """Raise now what :meth:`submit_bulk` would raise for a job of ``records`` records whatever its keys
        (:class:`BulkQueueFull`, :class:`WritesRefused`), so that a body is not parsed only to be refused;
        :meth:`submit_bulk` decides again, since the queue may fill in between, and judges the record cap,
        which needs the keys."""

    @abc.abstractmethod
    def bulk_status(self) -> BulkStatus:
        """A :class:`BulkStatus`, ``records_waiting`` and ``jobs_failed`` included."""

    @abc.abstractmethod
    def job_status(self, job: int) -> JobStatus | None:
        """The status of the bulk job numbered ``job`` (as :meth:`submit_bulk` returned it); None for a job
        unknown, or older than the last JOBS_KEPT accepted."""

    @abc.abstractmethod
    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every accepted bulk job is applied; False if ``timeout`` passed first, or at once
        when the store cannot be reached."""

    def close(self) -> None:  # noqa: B027 (a store that holds nothing need not override it)
        """Release what the store holds (connections, greenlets)."""

    def needs_initial_data(self) -> bool:
        """True when the store lost its data while the service ran (a Redis restarted empty), so that
        initial data should be loaded again."""
        return False

    def health(self) -> Health:
        """What the store says of itself (:class:`Health`), read without a round trip to a server."""
        return Health()
