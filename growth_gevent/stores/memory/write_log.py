"""The memory store's one durability partner: what the store tells it at each write and read, and what it
holds (:class:`WriteLog`); what it may do to the store (:class:`LoggedStore`); and :class:`NoLog`, the
partner of a store that keeps nothing past the process. The journal
(:class:`growth_gevent.durability.journaled.JournalLog`) is the partner that keeps the writes.

The store calls the partner in the same step as it applies a write, a step that does not yield (what keeps
the store lock-free); the partner then makes the write wait, outside that step, until its record is durable.
A read, when the partner makes reads wait, hands it the read and what it covers, so that it can make the
read wait for the writes in flight it would show. The partner holds what follows from durability: whether
writes are refused (after the journal or a snapshot failed), how the snapshots fare and how many changes
were made (for the snapshotter, which talks to the partner only), all told in the store's ``health()``. It
changes the store only through :class:`LoggedStore`: to replay what it holds, to hand the applier the bulk
jobs it has logged, and to undo the writes it could not keep.
"""

from collections.abc import Callable
from typing import Protocol, TypeVar

from ...core.descriptions import Description
from ...core.records import Key, Number, Record
from ..base import Health

Answer = TypeVar("Answer")
# Whether a write of ``key`` (``sized``: it created or removed the record) may change a read's answer.
Covers = Callable[[Key, bool], bool]
NO_HEALTH = Health()


class LoggedStore(Protocol):
    """What a write log may do to the store it logs; none of it is logged again or refused."""

    next_job: int  # the number the next bulk job accepted gets

    def restore(self, key: Key, value: Number | None) -> None:
        """Set ``key`` to ``value``, or remove it (None): replay, and the undo of a write not kept."""

    def apply_records(self, records: list[Record]) -> None:
        """Store ``records`` at once: replay of a bulk chunk that was applied."""

    def queue_job(self, records: list[Record], number: int, applied: int) -> None:
        """Give the applier a bulk job the log holds, ``applied`` of its records already applied."""

    def release_new_keys(self, number: int) -> None:
        """Forget the keys bulk job ``number`` counted against the record cap: a job undone unapplied."""

    def copy(self) -> dict[str, dict[str, dict[int, Number]]]:
        """The store's records, copied in one step."""

    def restore_descriptions(self, by: str, descriptions: dict[str, Description]) -> None:
        """Set each code's description (``{}``: none): replay, and the undo of a patch not kept."""

    def copy_descriptions(self) -> dict[str, dict[str, Description]]:
        """The descriptions, by -> code -> description, copied in one step (with :meth:`copy`)."""


class WriteLog(Protocol):
    """The memory store's durability partner. Each method that logs may raise ``WritesRefused`` when the write
    cannot be kept: the store has applied it, and the log has undone it (through :class:`LoggedStore`)."""

    refusal: str | None  # why writes are refused (the store raises WritesRefused), or None
    reads_wait: bool  # whether reads go through read(): False, they are answered at once

    def attach(self, store: LoggedStore) -> None:
        """The store whose writes this logs; called once, by the store, as it is built."""

    def wrote(self, key: Key, value: Number | None, previous: Number | None, sized: bool) -> None:
        """``key`` was set to ``value`` (None: deleted) over ``previous`` (None: no record); ``sized``: the
        write created or removed the record. Log it and return once it is kept, as the log's policy says."""

    def described(self, by: str, descriptions: dict[str, Description], previous: dict[str, Description]) -> None:
        """Descriptions of ``by``'s codes were set to ``descriptions`` (``{}``: removed) over ``previous``. Log
        them and return once they are kept, as :meth:`wrote`."""

    def read(self, read: Callable[[], Answer], covers: Covers) -> Answer:
        """``read()``'s answer, once the writes in flight that ``covers`` are kept (the log's policy may not
        wait at all); read again if some of them could not be kept and were undone."""

    def bulk_accepted(self, number: int, records: list[Record], initial: bool) -> None:
        """Bulk job ``number`` was accepted: log it and queue it (:meth:`LoggedStore.queue_job`) once it is
        kept, then return. ``initial``: initial data, read again at every start, never logged."""

    def records_accepted(self) -> int:
        """Records of bulk jobs logged and not yet queued: they count against the queue's room."""

    def chunk_applied(self, chunk: list[Record]) -> None:
        """The applier stored ``chunk``, the next records of the oldest job queued."""

    def health(self) -> Health:
        """The store's ``health()``: writes refused, the snapshots, the log's figures."""

    def close(self) -> None:
        """The store stops: every write that returned is kept."""


class NoLog(WriteLog):
    """No durability: writes are kept by nothing past the process, never refused, and reads never wait."""

    def __init__(self) -> None:
        self.refusal = None
        self.reads_wait = False
        self._store: LoggedStore | None = None

    def attach(self, store: LoggedStore) -> None:
        self._store = store

    def wrote(self, key: Key, value: Number | None, previous: Number | None, sized: bool) -> None:
        """Nothing to keep."""

    def described(self, by: str, descriptions: dict[str, Description], previous: dict[str, Description]) -> None:
        """Nothing to keep."""

    def read(self, read: Callable[[], Answer], covers: Covers) -> Answer:
        return read()

    def bulk_accepted(self, number: int, records: list[Record], initial: bool) -> None:
        assert self._store is not None, "attach() first"
        self._store.queue_job(records, number, 0)

    def records_accepted(self) -> int:
        return 0

    def chunk_applied(self, chunk: list[Record]) -> None:
        """Nothing to keep."""

    def health(self) -> Health:
        return NO_HEALTH

    def close(self) -> None:
        """Nothing to keep."""


def covering(country: str | None = None, indicator: str | None = None, first: int | None = None,
             last: int | None = None, after: Key | None = None) -> Covers:
    """What a read of these filters (None: any) covers: every write in its range, which may change the
    records it returns and the total it counts; with ``after``, only writes past that key."""
    def covers(key: Key, sized: bool) -> bool:
        return ((country is None or key[0] == country) and (indicator is None or key[1] == indicator)
                and (first is None or key[2] >= first) and (last is None or key[2] <= last)
                and (after is None or key > after))
    return covers


def covering_sized(country: str | None = None, indicator: str | None = None) -> Covers:
    """What a facet covers: a record created or removed in its range (a value replaced changes no count)."""
    in_range = covering(country, indicator)
    return lambda key, sized: sized and in_range(key, sized)
