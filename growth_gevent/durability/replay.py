"""Reading the journal back (growth_gevent.durability.journal writes it): torn tails, damage, and replay.

A bad record whose frame reaches the end of its file (or is followed by zeros only) is a torn tail,
what a crash in the middle of a write leaves: dropped with a warning, as Redis's ``aof-load-truncated``.
A bad record with valid data after it is damage: :class:`JournalDamaged`, and nothing is changed.
"""

import dataclasses
import logging
import marshal
import sys
import zlib

import ujson

from .journal import FRAME, SEGMENT_INFIX, segment_numbers, segment_path

log = logging.getLogger("growth_gevent")


class JournalDamaged(Exception):
    """A segment that cannot be replayed, or segments missing between the snapshot and the last one."""


def read_segment(path):
    """The payloads of a segment file, and the offset of a torn tail (None if there is none)."""
    with open(path, "rb") as segment:
        data = segment.read()
    payloads, offset, end = [], 0, len(data)
    while offset < end:
        problem = None
        if end - offset < FRAME.size:
            problem = "a record header cut short"
        else:
            length, checksum = FRAME.unpack_from(data, offset)
            start = offset + FRAME.size
            if start + length > end:
                problem = "a record cut short"
            elif length == 0 or zlib.crc32(data[start:start + length]) != checksum:
                problem = "a record whose checksum does not match"
        if problem is None:
            payloads.append(data[start:start + length])
            offset = start + length
            continue
        frame_end = offset + FRAME.size + (length if end - offset >= FRAME.size else 0)
        if frame_end >= end or not data[offset:].strip(b"\0"):
            return payloads, offset
        raise JournalDamaged(f"{path} is damaged: {problem} at byte {offset}, with data after it")
    return payloads, None


@dataclasses.dataclass
class QueuedJob:
    """A bulk job accepted and not wholly applied: ``records`` from record ``offset`` of the job on,
    ``applied`` the job's records applied so far (at least ``offset``)."""

    job: int | None  # None: initial data, which is not logged
    offset: int
    records: list
    applied: int = 0

    def remainder(self):
        return self.records[self.applied - self.offset:]


@dataclasses.dataclass
class Recovered:
    """What replay found: the segments read, the jobs left queued, the next job number, and counts."""

    segments: list
    queued: list
    next_job: int
    records: int = 0


def replay(snapshot_path, first, store):
    """Apply the segments from number ``first`` on to ``store`` (``restore(key, value or None)``,
    ``apply_records(records)``); :class:`JournalDamaged` before anything is applied if one cannot be read.

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
    for number in numbers:
        path = segment_path(snapshot_path, number)
        payloads, torn = read_segment(path)
        try:
            segments.append([_parsed(payload) for payload in payloads])
        except (ValueError, TypeError) as error:
            raise JournalDamaged(f"{path} is damaged: a record that growth-gevent did not write ({error})") from None
        if torn is not None:
            log.warning("%s ends in a torn record at byte %d (a crash while it was written): dropped, as it was "
                        "never acknowledged", path, torn)
    recovered = Recovered(numbers, [], 1)
    jobs = {}
    for number, records in zip(numbers, segments, strict=True):
        for record in records:
            recovered.records += 1
            kind = record[0]
            if kind == "put":
                store.restore(record[1], record[2])
            elif kind == "del":
                store.restore(record[1], None)
            elif kind == "bulk":
                jobs[record[1].job] = record[1]
                recovered.next_job = max(recovered.next_job, record[1].job + 1)
            elif kind == "applied":
                job = jobs.get(record[1])
                if job is None or not job.applied <= record[2] <= job.offset + len(job.records):
                    raise JournalDamaged(f"{segment_path(snapshot_path, number)} is damaged: it marks records of "
                                         f"bulk job {record[1]} applied that it does not hold")
                store.apply_records(job.records[job.applied - job.offset:record[2] - job.offset])
                job.applied = record[2]
                if job.applied == job.offset + len(job.records):
                    del jobs[record[1]]
            elif record[1] == number:  # a segment's header: the queue as it stood when the segment began
                jobs = {job.job: job for job in record[3]}
                recovered.next_job = max(recovered.next_job, record[2])
            else:
                raise JournalDamaged(f"{segment_path(snapshot_path, number)} is damaged: it begins as segment "
                                     f"{record[1]}")
    recovered.queued = list(jobs.values())
    return recovered


def _parsed(payload):
    """A payload as ``(kind, ...)`` with keys as tuples and jobs as :class:`QueuedJob`; ValueError or
    TypeError for one that growth-gevent would not have written."""
    head, _, records = payload.partition(b"\n")
    record = ujson.loads(head)
    kind = record[0]
    if kind == "put" and len(record) == 5:
        return kind, _key(record[1:4]), _number(record[4])
    if kind == "del" and len(record) == 4:
        return kind, _key(record[1:4]), None
    if kind == "bulk" and len(record) == 3:
        return kind, _job(*record[1:], marshal.loads(records))
    if kind == "applied" and len(record) == 3 and type(record[1]) is int and type(record[2]) is int:
        return kind, record[1], record[2]
    if kind == "segment" and len(record) == 4 and type(record[1]) is int and type(record[2]) is int:
        jobs = marshal.loads(records)
        if len(jobs) != len(record[3]):
            raise ValueError("a segment header whose jobs do not match their records")
        return kind, record[1], record[2], [_job(*job, rows) for job, rows in zip(record[3], jobs, strict=True)]
    raise ValueError(f"an unknown record {payload[:40]!r}")


def _key(fields):
    country, indicator, year = fields
    if type(country) is not str or type(indicator) is not str or type(year) is not int:
        raise ValueError("a key that is not [country, indicator, year]")
    return sys.intern(country), sys.intern(indicator), year


def _number(value):
    if type(value) not in (int, float):
        raise ValueError("a value that is not a number")
    return value


def _job(job, offset, rows):
    if type(job) is not int or type(offset) is not int:
        raise ValueError("a bulk job without its number and offset")
    return QueuedJob(job, offset, [(_key(key), _number(value)) for key, value in rows], offset)
