"""Reading the journal back (growth_gevent.durability.journal writes it): torn tails, damage, and replay.

A record that does not check out (its header's checksum, its length, its payload's checksum) is a torn
tail when no valid record follows it in its file: what a crash in the middle of a write leaves, dropped
with a warning, as Redis's ``aof-load-truncated``. Only if it is cut short, though, or the machine
restarted since its segment was written: a record whose every byte is there but whose checksum fails is not
what a killed process leaves (its file keeps every byte that write(2) took, and a write stopped part-way
leaves a file cut short), so with the same boot id as the segment's link it is damage too. With a valid
record anywhere after it, it is damage: :class:`JournalDamaged`, naming the file and the byte, and nothing
is changed. The search for a valid record after a bad one looks at every place one could begin (every
payload begins ``["``), so that a damaged length, which would hide the records after it, is not taken for a
record cut short.

Only the newest segment can end torn: the writer fsyncs a segment before it begins the next, and start-up
cuts a torn tail before it does. So the segments read must prove their own history before anything is
applied (:func:`verify_chain`): each one's link names the length and CRC-32 of the one before, which is
whole and unchanged; the first one read follows the snapshot, or is segment 1 when there is none.
Anything else is damage, whatever comes after it.
"""

import dataclasses
import logging
import os
import zlib
from typing import Protocol

from ..core.descriptions import Description
from ..core.records import Key, Number, Record
from .identity import Identity
from .journal import ALWAYS, EVERYSEC
from .journal_format import (
    FRAME,
    FRAME_V1,
    LINKED,
    MAGIC_V2,
    MAGIC_V3,
    SEGMENT_INFIX,
    SEGMENT_MAGIC,
    VERSION,
    HeaderJob,
    Link,
    Stamp,
    check_frame,
    cut_short,
    parse_link,
    parse_record,
    segment_numbers,
    segment_path,
    valid_frame_after,
)

log = logging.getLogger("growth_gevent")


class JournalDamaged(Exception):
    """A segment that cannot be replayed, or segments missing between the snapshot and the last one."""


@dataclasses.dataclass
class TornTail:
    """The end of a segment that holds no valid record: ``size`` bytes from byte ``offset``."""

    path: str
    offset: int
    size: int
    problem: str
    records: int  # cut short in it: 1, or 0 for zeros only
    # Every byte of the bad record (or header) is there: a changed record, not one cut short; then the boot ids
    # of the machine as the segment was written and now (None where not known).
    whole: bool = False
    boots: tuple[str | None, str | None] = (None, None)

    def what(self) -> str:
        """What the tail is and where, as the files show it."""
        if not self.whole:
            return f"a torn record at byte {self.offset} (a crash in the middle of a write)"
        return (f"a record that fails its checksum{'' if self.records else ' (zeros only)'} at byte {self.offset}, "
                "every byte of it there")

    def dropped(self, policy: str) -> str:
        """What dropping it loses, by the fsync ``policy`` in force."""
        if self.whole:
            written, now = self.boots
            if written and now:
                why = f"the machine restarted since the segment was written (boot id {written}, now {now})"
            elif written:
                why = (f"the segment names the boot it was written in (boot id {written}), but this system gives no "
                       "boot id now to tell whether the machine restarted since")
            else:
                why = ("its segment does not say in which boot of the machine it was written (an older format, or a "
                       "system without boot ids)")
            return (f"{self.size} bytes from byte {self.offset} ({self.problem}, every byte of it there): {why}, "
                    "so a crash of the machine may have left it, and so may the disk: it may have been "
                    "acknowledged, and it is lost")
        if self.records == 0:
            lost = "zeros only: nothing was written there"
        elif policy == ALWAYS:
            lost = ("1 record cut short, never acknowledged: under GROWTH_FSYNC=always a write is answered only "
                    "once its record is on disk")
        else:
            lost = (f"1 record cut short, which under GROWTH_FSYNC={policy} may have been acknowledged if the "
                    f"machine itself stopped (power loss, kernel crash) "
                    f"{'within a second of' if policy == EVERYSEC else 'soon after'} the write, "
                    "but not if only the process was killed")
        return f"{self.size} bytes from byte {self.offset} ({self.problem}): {lost}"

    def cut(self) -> None:
        """Truncate the file where the tail begins, durably: ``check --repair``, and start-up before it begins
        the next segment (which makes this one's end final)."""
        with open(self.path, "r+b") as segment:
            segment.truncate(self.offset)
            os.fsync(segment.fileno())


@dataclasses.dataclass
class Segment:
    """A segment file as read."""

    path: str
    version: int
    payloads: list[bytes]  # of its records after its link: its header first
    end: int  # where its last valid record ends
    crc: int  # the CRC-32 of its bytes before ``end``
    follows: Link | None  # its link: version 3 on, once written
    stamp: Stamp  # the store and the boot its link names: (None, None) before version 4
    torn: TornTail | None


def read_segment(path: str) -> Segment:
    """A segment file's records, link and :class:`TornTail` (None if it has none)."""
    with open(path, "rb") as segment:
        data = segment.read()
    if data.startswith((SEGMENT_MAGIC, MAGIC_V3, MAGIC_V2)):
        version, framing, offset = data[len(SEGMENT_MAGIC) - 1], FRAME, len(SEGMENT_MAGIC)
    elif data.startswith(SEGMENT_MAGIC[:-1]):
        raise JournalDamaged(f"{path} is journal format version {data[len(SEGMENT_MAGIC) - 1]}; this version of "
                             f"growth-gevent reads versions 1 to {VERSION}")
    elif len(data) < len(SEGMENT_MAGIC) and SEGMENT_MAGIC.startswith(data):
        # Created, and the process stopped before its magic was written: nothing was.
        torn = TornTail(path, 0, len(data), "a segment header cut short", 0) if data else None
        return Segment(path, VERSION, [], 0, 0, None, (None, None), torn)
    else:
        version, framing, offset = 1, FRAME_V1, 0
    payloads, torn = [], None
    while offset < len(data):
        checked = check_frame(data, offset, framing)
        if checked[1] is None:
            start = offset + framing.size
            payloads.append(data[start:start + checked[0]])
            offset = start + checked[0]
            continue
        problem = checked[1]
        after = valid_frame_after(data, offset)
        if after is not None:
            raise JournalDamaged(f"{path} is damaged: {problem} at byte {offset}, with a valid record at byte {after} "
                                 "after it")
        torn = TornTail(path, offset, len(data) - offset, problem, 1 if data[offset:].strip(b"\0") else 0,
                        not cut_short(problem))
        break
    follows, stamp = _link(path, payloads.pop(0), version) if version >= LINKED and payloads else (None, (None, None))
    return Segment(path, version, payloads, offset, zlib.crc32(memoryview(data)[:offset]), follows, stamp, torn)


def _link(path: str, payload: bytes, version: int) -> tuple[Link, Stamp]:
    """The link a segment begins with, and its stamp; JournalDamaged if it is not one."""
    link = parse_link(payload, version)
    if link is None:
        raise JournalDamaged(f"{path} is damaged: it does not begin with its link to the segment before it, at "
                             f"byte {len(SEGMENT_MAGIC)}")
    return link


@dataclasses.dataclass
class QueuedJob:
    """A bulk job accepted and not wholly applied: ``records`` from record ``offset`` of the job on,
    ``applied`` the job's records applied so far (at least ``offset``)."""

    job: int | None  # None: initial data, which is not logged
    offset: int
    records: list[Record]
    applied: int = 0

    def remainder(self) -> list[Record]:
        return self.records[self.applied - self.offset:]


@dataclasses.dataclass
class Recovered:
    """What replay found: the segments read, the jobs left queued, the next job number, counts, and where
    the journal goes on: the segment to begin and its link."""

    segments: list[int]
    queued: list[QueuedJob]
    next_job: int
    next_segment: int
    follows: Link
    records: int = 0
    torn: list[TornTail] = dataclasses.field(default_factory=list)  # the TornTail of each segment that had one


class Replayed(Protocol):
    """What replay writes to: the journaled store, or the check's store that keeps nothing."""

    def restore(self, key: Key, value: Number | None) -> None: ...

    def apply_records(self, records: list[Record]) -> None: ...

    def restore_descriptions(self, by: str, descriptions: dict[str, Description]) -> None: ...


def replay(snapshot_path: str, first: int, store: Replayed, identity: Identity, boot: str | None) -> Recovered:
    """Apply the segments from number ``first`` on (the snapshot's; 0: no snapshot) to ``store``
    (``restore(key, value or None)``, ``apply_records(records)``); before anything is applied,
    :class:`~.identity.IdentityError` if one names another store than ``identity`` (which learns the store
    from the first that names one, if it knew none), :class:`JournalDamaged` if one cannot be read or they do
    not prove their history (:func:`verify_chain`), or if the newest one ends in a record changed rather than
    cut short with the machine not restarted since (``boot``: its boot id now, None where not known). The
    newest segment's torn tail is dropped, and listed in what it returns, for the caller to say and cut.

    Idempotent: every record sets or removes values, so replaying again over the result changes nothing.
    """
    numbers = [number for number in segment_numbers(snapshot_path) if number >= first]
    read = [read_segment(segment_path(snapshot_path, number)) for number in numbers]
    for segment in read:
        identity.claim(segment.path, segment.stamp[0])
    unnamed = [segment.path for segment in read if segment.payloads and segment.stamp[0] is None]
    if unnamed:
        log.warning("%s %s of an older journal format, which names no store: read as %s; the segments written "
                    "from now on name it", ", ".join(unnamed), "is" if len(unnamed) == 1 else "are",
                    "it is" if len(unnamed) == 1 else "they are")
    verify_chain(snapshot_path, first, numbers, read)
    if read and read[-1].torn is not None and read[-1].torn.whole:
        _verify_changed_tail(read[-1], boot)
    segments = []
    recovered = Recovered(numbers, [], 1, *_continued(first, numbers, read))
    for segment in read:
        try:
            segments.append([parse_record(payload) for payload in segment.payloads])
        except (ValueError, TypeError) as error:
            raise JournalDamaged(f"{segment.path} is damaged: a record that growth-gevent did not write "
                                 f"({error})") from None
        if segment.torn is not None:
            recovered.torn.append(segment.torn)
    jobs: dict[int, QueuedJob] = {}
    for number, records in zip(numbers, segments, strict=True):
        for record in records:
            recovered.records += 1
            if record[0] == "put":
                store.restore(record[1], record[2])
            elif record[0] == "del":
                store.restore(record[1], None)
            elif record[0] == "describe":
                store.restore_descriptions(record[1], record[2])
            elif record[0] == "bulk":
                jobs[record[1][0]] = _queued(record[1])
                recovered.next_job = max(recovered.next_job, record[1][0] + 1)
            elif record[0] == "applied":
                job = jobs.get(record[1])
                if job is None or not job.applied <= record[2] <= job.offset + len(job.records):
                    raise JournalDamaged(f"{segment_path(snapshot_path, number)} is damaged: it marks records of "
                                         f"bulk job {record[1]} applied that it does not hold")
                store.apply_records(job.records[job.applied - job.offset:record[2] - job.offset])
                job.applied = record[2]
                if job.applied == job.offset + len(job.records):
                    del jobs[record[1]]
            elif record[1] == number:  # a segment's header: the queue as it stood when the segment began
                jobs = {job[0]: _queued(job) for job in record[3]}
                recovered.next_job = max(recovered.next_job, record[2])
            else:
                raise JournalDamaged(f"{segment_path(snapshot_path, number)} is damaged: it begins as segment "
                                     f"{record[1]}")
    recovered.queued = list(jobs.values())
    return recovered


def verify_chain(snapshot_path: str, first: int, numbers: list[int], segments: list[Segment]) -> None:
    """JournalDamaged unless ``segments`` (numbered ``numbers``, from the snapshot's ``first`` on; 0: no
    snapshot) are the whole history after the snapshot: no number missing, the first one read the
    snapshot's (1 without one), and every one that has a successor whole, as its successor's link says it
    was written. Segments of versions 1 and 2 have no link: only a torn tail before a version 3 one is
    damage there (versions before 3 did not cut a torn tail at start-up)."""
    if not numbers:
        return
    if numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        raise JournalDamaged(f"segments of {snapshot_path}{SEGMENT_INFIX}* are missing between "
                             f"{numbers[0]} and {numbers[-1]}")
    if first and numbers[0] != first:
        raise JournalDamaged(f"{segment_path(snapshot_path, first)}, the first segment after the snapshot, "
                             f"is missing (the journal begins at segment {numbers[0]})")
    if not first and numbers[0] != 1:
        raise JournalDamaged(f"{segments[0].path} begins the journal, and there is no snapshot {snapshot_path} "
                             f"to hold segments 1-{numbers[0] - 1} before it: the snapshot, or those segments, "
                             "were removed")
    for index, (number, segment) in enumerate(zip(numbers, segments, strict=True)):
        after = segments[index + 1] if index + 1 < len(segments) else None
        if after is not None and after.version >= LINKED and segment.torn is not None:
            raise JournalDamaged(f"{segment.path} is damaged: {segment.torn.problem} at byte {segment.torn.offset}, "
                                 f"and {after.path} follows it: only the newest segment can end torn (each one is "
                                 "fsynced before the next begins)")
        if segment.follows is None:
            continue
        previous = segment.follows[0]
        if previous != number - 1:
            raise JournalDamaged(f"{segment.path} is damaged: its link at byte {len(SEGMENT_MAGIC)} names segment "
                                 f"{previous} before it")
        if index:
            _verify_link(snapshot_path, first, segments[index - 1], segment)


def _verify_changed_tail(segment: Segment, boot: str | None) -> None:
    """JournalDamaged if ``segment`` (the newest) ends in a record whose every byte is there, and the machine
    has not restarted since it was written; else its tail says which boots it was written in and read in."""
    torn = segment.torn
    assert torn is not None
    written = segment.stamp[1]
    if written is not None and written == boot:
        raise JournalDamaged(f"{segment.path} is damaged: {torn.problem} at byte {torn.offset}, every byte of it "
                             "there, and the machine has not restarted since the segment was written (boot id "
                             f"{boot}): a crash of the process leaves a record cut short, never one changed")
    torn.boots = (written, boot)


def _verify_link(snapshot_path: str, first: int, before: Segment, segment: Segment) -> None:
    """JournalDamaged unless ``before`` ends as ``segment``'s link says it did, its bytes unchanged."""
    assert segment.follows is not None
    _, length, crc = segment.follows
    if length is None:
        raise JournalDamaged(f"{segment.path} began after a snapshot that held {before.path} and the segments "
                             f"before it, and the snapshot {snapshot_path} "
                             f"{f'holds only those before {first}' if first else 'is missing'}: it was "
                             "removed, or replaced by an older one")
    if before.end < length:
        raise JournalDamaged(f"{before.path} is damaged: it ends at byte {before.end}, and {segment.path} says it "
                             f"ended at byte {length}: cut short or emptied")
    if before.end > length:
        raise JournalDamaged(f"{before.path} is damaged: {before.end - length} bytes after byte {length}, where "
                             f"{segment.path} says it ended")
    if before.crc != crc:
        raise JournalDamaged(f"{before.path} is damaged: its {length} bytes do not match the CRC-32 that "
                             f"{segment.path} holds of them (crc32 {before.crc:08x}, the link says {crc:08x}): "
                             "changed since it was written")


def _continued(first: int, numbers: list[int], segments: list[Segment]) -> tuple[int, Link]:
    """The segment to begin after replay, and its link: the next number, after the newest segment read;
    that one's own number when it holds no record (a crash as it began: it is written again)."""
    if segments and not segments[-1].payloads:
        numbers, segments = numbers[:-1], segments[:-1]
    if not segments:
        return max(first, 1), (max(first, 1) - 1, None, None)
    return numbers[-1] + 1, (numbers[-1], segments[-1].end, segments[-1].crc)


def _queued(job: HeaderJob) -> QueuedJob:
    number, offset, records = job
    return QueuedJob(number, offset, records, offset)
