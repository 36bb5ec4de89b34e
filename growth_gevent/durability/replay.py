"""Reading the journal back (growth_gevent.durability.journal writes it): torn tails, damage, and replay.

A record that does not check out (its header's checksum, its length, its payload's checksum) is a torn
tail when no valid record follows it in its file: what a crash in the middle of a write leaves, dropped
with a warning, as Redis's ``aof-load-truncated``. With a valid record anywhere after it, it is damage:
:class:`JournalDamaged`, naming the file and the byte, and nothing is changed. The search for a valid
record after a bad one looks at every place one could begin (every payload begins ``["``), so that a
damaged length, which would hide the records after it, is not taken for a record cut short.
"""

import dataclasses
import marshal
import struct
import sys
import zlib
from typing import Any, Literal, Protocol

import ujson

from ..core.records import Key, Number, Record
from .journal import ALWAYS, EVERYSEC, FRAME, SEGMENT_INFIX, SEGMENT_MAGIC, segment_numbers, segment_path

_FRAME_V1 = struct.Struct("<II")  # version 1 segments: no magic, no checksum of the header
_PAYLOAD_START = b'["'  # every record's payload begins so


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

    def dropped(self, policy: str) -> str:
        """What dropping it loses, by the fsync ``policy`` in force."""
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


def read_segment(path: str) -> tuple[list[bytes], TornTail | None]:
    """The payloads of a segment file, and its :class:`TornTail` (None if it has none)."""
    with open(path, "rb") as segment:
        data = segment.read()
    if data.startswith(SEGMENT_MAGIC):
        frame, offset = FRAME, len(SEGMENT_MAGIC)
    elif data.startswith(SEGMENT_MAGIC[:-1]):
        raise JournalDamaged(f"{path} is journal format version {data[len(SEGMENT_MAGIC) - 1]}; this version of "
                             f"growth-gevent reads versions 1 and {SEGMENT_MAGIC[-1]}")
    elif len(data) < len(SEGMENT_MAGIC) and SEGMENT_MAGIC.startswith(data):
        # Created, and the process stopped before its magic was written: nothing was.
        return [], TornTail(path, 0, len(data), "a segment header cut short", 0) if data else None
    else:
        frame, offset = _FRAME_V1, 0
    payloads = []
    while offset < len(data):
        checked = _check_frame(data, offset, frame)
        if checked[1] is None:
            start = offset + frame.size
            payloads.append(data[start:start + checked[0]])
            offset = start + checked[0]
            continue
        problem = checked[1]
        after = _valid_frame_after(data, offset)
        if after is None:
            return payloads, TornTail(path, offset, len(data) - offset, problem, 1 if data[offset:].strip(b"\0") else 0)
        raise JournalDamaged(f"{path} is damaged: {problem} at byte {offset}, with a valid record at byte {after} "
                             "after it")
    return payloads, None


def _check_frame(data: bytes, offset: int, frame: struct.Struct) -> tuple[int, None] | tuple[None, str]:
    """``(length, None)`` for a valid record at ``offset`` framed by ``frame``; else ``(None, problem)``."""
    if len(data) - offset < frame.size:
        return None, "a record header cut short"
    if frame is FRAME:
        length, checksum, header_checksum = FRAME.unpack_from(data, offset)
        if zlib.crc32(data[offset:offset + 8]) != header_checksum:
            return None, "a record header whose checksum does not match"
    else:
        length, checksum = frame.unpack_from(data, offset)
    start = offset + frame.size
    if start + length > len(data):
        return None, "a record cut short"
    if length == 0 or zlib.crc32(data[start:start + length]) != checksum:
        return None, "a record whose checksum does not match"
    return length, None


def _valid_frame_after(data: bytes, offset: int) -> int | None:
    """Where the first valid record of either version begins after byte ``offset``, or None."""
    position = data.find(_PAYLOAD_START, offset + 1 + _FRAME_V1.size)
    while position != -1:
        for frame in (FRAME, _FRAME_V1):
            start = position - frame.size
            if start > offset and _check_frame(data, start, frame)[1] is None:
                return start
        position = data.find(_PAYLOAD_START, position + 1)
    return None


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
    """What replay found: the segments read, the jobs left queued, the next job number, and counts."""

    segments: list[int]
    queued: list[QueuedJob]
    next_job: int
    records: int = 0
    torn: list[TornTail] = dataclasses.field(default_factory=list)  # the TornTail of each segment that had one


class Replayed(Protocol):
    """What replay writes to: the journaled store, or the check's store that keeps nothing."""

    def restore(self, key: Key, value: Number | None) -> None: ...

    def apply_records(self, records: list[Record]) -> None: ...


# A record as _parsed reads it.
Parsed = (tuple[Literal["put"], Key, Number] | tuple[Literal["del"], Key, None]
          | tuple[Literal["bulk"], int, QueuedJob] | tuple[Literal["applied"], int, int]
          | tuple[Literal["segment"], int, int, list[tuple[int, QueuedJob]]])


def replay(snapshot_path: str, first: int, store: Replayed) -> Recovered:
    """Apply the segments from number ``first`` on to ``store`` (``restore(key, value or None)``,
    ``apply_records(records)``); :class:`JournalDamaged` before anything is applied if one cannot be read.
    Torn tails are dropped, and listed in what it returns, for the caller to say.

    Idempotent: every record sets or removes values, so replaying again over the result changes nothing.
    """
    numbers = [number for number in segment_numbers(snapshot_path) if number >= first]
    if numbers and numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        raise JournalDamaged(f"segments of {snapshot_path}{SEGMENT_INFIX}* are missing between "
                             f"{numbers[0]} and {numbers[-1]}")
    if numbers and first and numbers[0] != first:
        raise JournalDamaged(f"{segment_path(snapshot_path, first)}, the first segment after the snapshot, "
                             "is missing")
    segments = []
    recovered = Recovered(numbers, [], 1)
    for number in numbers:
        path = segment_path(snapshot_path, number)
        payloads, torn = read_segment(path)
        try:
            segments.append([_parsed(payload) for payload in payloads])
        except (ValueError, TypeError) as error:
            raise JournalDamaged(f"{path} is damaged: a record that growth-gevent did not write ({error})") from None
        if torn is not None:
            recovered.torn.append(torn)
    jobs: dict[int, QueuedJob] = {}
    for number, records in zip(numbers, segments, strict=True):
        for record in records:
            recovered.records += 1
            if record[0] == "put":
                store.restore(record[1], record[2])
            elif record[0] == "del":
                store.restore(record[1], None)
            elif record[0] == "bulk":
                jobs[record[1]] = record[2]
                recovered.next_job = max(recovered.next_job, record[1] + 1)
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
                jobs = dict(record[3])
                recovered.next_job = max(recovered.next_job, record[2])
            else:
                raise JournalDamaged(f"{segment_path(snapshot_path, number)} is damaged: it begins as segment "
                                     f"{record[1]}")
    recovered.queued = list(jobs.values())
    return recovered


def _parsed(payload: bytes) -> Parsed:
    """A payload as ``(kind, ...)`` with keys as tuples and jobs as ``(number, QueuedJob)``; ValueError or
    TypeError for one that growth-gevent would not have written."""
    head, _, records = payload.partition(b"\n")
    record = ujson.loads(head)
    kind = record[0]
    if kind == "put" and len(record) == 5:
        return "put", _key(record[1:4]), _number(record[4])
    if kind == "del" and len(record) == 4:
        return "del", _key(record[1:4]), None
    if kind == "bulk" and len(record) == 3:
        return "bulk", *_job(record[1:], marshal.loads(records))
    if kind == "applied" and len(record) == 3 and type(record[1]) is int and type(record[2]) is int:
        return "applied", record[1], record[2]
    if kind == "segment" and len(record) == 4 and type(record[1]) is int and type(record[2]) is int:
        jobs = marshal.loads(records)
        if len(jobs) != len(record[3]):
            raise ValueError("a segment header whose jobs do not match their records")
        return "segment", record[1], record[2], [_job(job, rows) for job, rows in zip(record[3], jobs, strict=True)]
    raise ValueError(f"an unknown record {payload[:40]!r}")


def _key(fields: Any) -> Key:
    country, indicator, year = fields
    if type(country) is not str or type(indicator) is not str or type(year) is not int:
        raise ValueError("a key that is not [country, indicator, year]")
    return sys.intern(country), sys.intern(indicator), year


def _number(value: object) -> Number:
    if type(value) is int or type(value) is float:
        return value
    raise ValueError("a value that is not a number")


def _job(fields: object, rows: Any) -> tuple[int, QueuedJob]:
    """A job's number, and the job from ``[number, offset]`` and its records (``rows``, as marshal read them)."""
    if type(fields) is not list or len(fields) != 2 or type(fields[0]) is not int or type(fields[1]) is not int:
        raise ValueError("a bulk job without its number and offset")
    number, offset = fields
    return number, QueuedJob(number, offset, [(_key(key), _number(value)) for key, value in rows], offset)
