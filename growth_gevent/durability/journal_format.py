"""The journal's format on disk, in one place: the writer (:mod:`.journal`) encodes with it, the reader
(:mod:`.replay`) decodes with it.

The log is a series of segment files, ``SNAPSHOT.journal.N``; a snapshot names the first segment it
does not hold (its ``"journal"`` field), so recovery loads the snapshot and replays the segments from
that one on. A segment begins with SEGMENT_MAGIC (its format's version in its last byte), then its link
to the segment before it, then its header and its records. Each record is framed ``[u32 length][u32
crc32 of the payload][u32 crc32 of the 8 bytes before]`` (little-endian): the header's own checksum
protects the length, as LevelDB's and PostgreSQL's WAL records do, so that a damaged length is seen as
damage rather than taken for a record cut short. The payload is a compact JSON array:

    ["follows", N - 1, length, crc32, store, boot]   first in every segment: the link (below)
    ["segment", N, next_job, [[job, offset], ...]] + records   next in every segment: the jobs queued
    ["put", country, indicator, year, value]
    ["del", country, indicator, year]
    ["bulk", job, offset] + records   a bulk job as accepted
    ["applied", job, through]   the job's records before ``through`` are applied, here in the order
    ["describe", by, {code: description, ...}]   descriptions set ({} removed): core/descriptions.py

``+ records``: a newline, then the records (``[((country, indicator, year), value), ...]``, a list of
them for each job of a header) in Python's ``marshal`` format, which writes them five times faster than
JSON. The payload is checked by its CRC before it is read: marshal never reads what was not written.

A bulk job is applied lazily, after later writes may have been: its markers put its chunks where they
were applied, so that replay reaches the state the store had. A segment's header lists the jobs still
queued when it began, with the records they had left (``offset``: how many were applied before), so
that the segments before it are not needed once a snapshot holds what they did.

The link chains the files, as PostgreSQL's WAL records do with ``xl_prev``: it holds the length of
segment N - 1 and the CRC-32 of all its bytes, as the writer left it before it began this one (it is
fsynced first), so that replay tells a segment cut short, emptied or changed from one that ended there;
``null, null`` when the writer did not hold segment N - 1: the snapshot it started from held it, or N is
1. docs/durability.md says what the chain proves and what it cannot (the newest segment lost whole). It
also names the store the segment belongs to and the machine's boot id as it was written (null where there
is none), :mod:`.identity`'s: replay refuses another store's segment, and tells a record changed on disk
from what a crash leaves.
"""

import marshal
import os
import re
import struct
import sys
import zlib
from typing import Any, Literal

import ujson

from ..core.descriptions import FIELDS, Description
from ..core.records import Key, Number, Record

FRAME = struct.Struct("<III")
_LENGTH_AND_CRC = struct.Struct("<II")
_HEADER_CRC = struct.Struct("<I")
FRAME_V1 = struct.Struct("<II")  # version 1 segments: no magic, no checksum of the header
# The first bytes of a segment; the last one is the format's version. Version 1 segments have no magic
# and frame records as ``[u32 length][u32 crc32][payload]``; version 2 ones have no link; version 3 ones a
# link without the store and the boot. Replay reads them still (an upgrade after a crash), and the journal
# writes version 4 only.
SEGMENT_MAGIC = b"GGJOURN\x04"
VERSION = SEGMENT_MAGIC[-1]
MAGIC_V2 = SEGMENT_MAGIC[:-1] + b"\x02"
MAGIC_V3 = SEGMENT_MAGIC[:-1] + b"\x03"
LINKED = 3  # the first version whose segments begin with their link
_PAYLOAD_START = b'["'  # every record's payload begins so
SEGMENT_INFIX = ".journal."
# A bulk job as a record holds it: (job, offset, records from that offset on).
HeaderJob = tuple[int, int, list[Record]]
# A segment's link to the one before it: (its number, its length and the CRC-32 of its bytes, or None and
# None when the writer did not hold it).
Link = tuple[int, int | None, int | None]
# Whose segment it is and when it was written: (the store's identity, the machine's boot id), either None
# where it has none (a segment of version 3, a system without boot ids).
Stamp = tuple[str | None, str | None]
# A record as parse_record reads it.
Parsed = (tuple[Literal["put"], Key, Number] | tuple[Literal["del"], Key, None]
          | tuple[Literal["bulk"], HeaderJob] | tuple[Literal["applied"], int, int]
          | tuple[Literal["segment"], int, int, list[HeaderJob]]
          | tuple[Literal["describe"], str, dict[str, Description]])


def segment_path(snapshot_path: str, number: int) -> str:
    return f"{snapshot_path}{SEGMENT_INFIX}{number}"


def segment_numbers(snapshot_path: str) -> list[int]:
    """The numbers of the segments beside ``snapshot_path``, in order."""
    directory, name = os.path.split(os.path.abspath(snapshot_path))
    pattern = re.compile(re.escape(name + SEGMENT_INFIX) + r"([1-9][0-9]*)")
    return sorted(int(match.group(1)) for match in map(pattern.fullmatch, os.listdir(directory)) if match)


# Writing.

def frame(payload: bytes) -> bytes:
    head = _LENGTH_AND_CRC.pack(len(payload), zlib.crc32(payload))
    return head + _HEADER_CRC.pack(zlib.crc32(head)) + payload


def _dumps(document: object) -> bytes:
    return ujson.dumps(document, escape_forward_slashes=False, ensure_ascii=False).encode()


def put_record(key: Key, value: Number) -> bytes:
    return frame(_dumps(("put", *key, value)))


def delete_record(key: Key) -> bytes:
    return frame(_dumps(("del", *key)))


def _with_records(head: tuple[object, ...], records: list[Record] | list[list[Record]]) -> bytes:
    # The records as they are, in one C call: marshal writes them several times faster than ujson
    # (docs/performance.md#the-journals-bulk-record-in-marshal), and a bulk POST's 202 waits for it.
    return frame(_dumps(head) + b"\n" + marshal.dumps(records))


def bulk_record(job: int, offset: int, records: list[Record]) -> bytes:
    return _with_records(("bulk", job, offset), records)


def applied_record(job: int, through: int) -> bytes:
    return frame(b'["applied",%d,%d]' % (job, through))


def describe_record(by: str, descriptions: dict[str, Description]) -> bytes:
    return frame(_dumps(("describe", by, descriptions)))


def link_record(link: Link, stamp: Stamp) -> bytes:
    return frame(_dumps(("follows", *link, *stamp)))


def segment_record(number: int, next_job: int, jobs: list[HeaderJob]) -> bytes:
    """``jobs``: ``[(job, offset, records), ...]``, the bulk jobs queued as the segment begins."""
    return _with_records(("segment", number, next_job, [job[:2] for job in jobs]), [job[2] for job in jobs])


# Reading.

def check_frame(data: bytes, offset: int, framing: struct.Struct) -> tuple[int, None] | tuple[None, str]:
    """``(length, None)`` for a valid record at ``offset`` framed by ``framing`` (FRAME or FRAME_V1); else
    ``(None, problem)``."""
    if len(data) - offset < framing.size:
        return None, "a record header cut short"
    if framing is FRAME:
        length, checksum, header_checksum = FRAME.unpack_from(data, offset)
        if zlib.crc32(data[offset:offset + 8]) != header_checksum:
            return None, "a record header whose checksum does not match"
    else:
        length, checksum = framing.unpack_from(data, offset)
    start = offset + framing.size
    if start + length > len(data):
        return None, "a record cut short"
    if length == 0 or zlib.crc32(data[start:start + length]) != checksum:
        return None, "a record whose checksum does not match"
    return length, None


def cut_short(problem: str) -> bool:
    """Whether ``problem`` (:func:`check_frame`'s) is a record or header that runs past the end of the file: what
    a write stopped part-way leaves, where every other problem has every byte of the record there."""
    return problem.endswith("cut short")


def valid_frame_after(data: bytes, offset: int) -> int | None:
    """Where the first valid record of either framing begins after byte ``offset``, or None."""
    position = data.find(_PAYLOAD_START, offset + 1 + FRAME_V1.size)
    while position != -1:
        for framing in (FRAME, FRAME_V1):
            start = position - framing.size
            if start > offset and check_frame(data, start, framing)[1] is None:
                return start
        position = data.find(_PAYLOAD_START, position + 1)
    return None


def parse_link(payload: bytes, version: int) -> tuple[Link, Stamp] | None:
    """The link a segment of format ``version`` begins with, and its stamp; None if ``payload`` is not one."""
    try:
        link = ujson.loads(payload)
    except ValueError:
        return None
    if (type(link) is list and len(link) == (4 if version == LINKED else 6) and link[0] == "follows"
            and type(link[1]) is int and (link[2:4] == [None, None] or (type(link[2]) is int and type(link[3]) is int))
            and all(value is None or type(value) is str for value in link[4:])):
        return (link[1], link[2], link[3]), (link[4], link[5]) if version > LINKED else (None, None)
    return None


def parse_record(payload: bytes) -> Parsed:
    """A payload as ``(kind, ...)`` with keys as tuples and jobs as :data:`HeaderJob`; ValueError or
    TypeError for one that growth-gevent would not have written."""
    head, _, records = payload.partition(b"\n")
    record = ujson.loads(head)
    kind = record[0]
    if kind == "put" and len(record) == 5:
        return "put", _key(record[1:4]), _number(record[4])
    if kind == "del" and len(record) == 4:
        return "del", _key(record[1:4]), None
    if kind == "bulk" and len(record) == 3:
        return "bulk", _job(record[1:], marshal.loads(records))
    if kind == "applied" and len(record) == 3 and type(record[1]) is int and type(record[2]) is int:
        return "applied", record[1], record[2]
    if kind == "segment" and len(record) == 4 and type(record[1]) is int and type(record[2]) is int:
        jobs = marshal.loads(records)
        if len(jobs) != len(record[3]):
            raise ValueError("a segment header whose jobs do not match their records")
        return "segment", record[1], record[2], [_job(job, rows) for job, rows in zip(record[3], jobs, strict=True)]
    if kind == "describe" and len(record) == 3:
        return ("describe", *described(record[1], record[2]))
    raise ValueError(f"an unknown record {payload[:40]!r}")


def described(by: object, descriptions: object) -> tuple[str, dict[str, Description]]:
    """``(by, descriptions)`` checked as growth-gevent writes them (a journal record, a snapshot); else ValueError."""
    if by not in FIELDS or type(descriptions) is not dict or not all(
            type(code) is str and type(fields) is dict and set(fields) <= set(FIELDS[by])
            and all(type(text) is str for text in fields.values()) for code, fields in descriptions.items()):
        raise ValueError("descriptions that are not {code: {field: text}}")
    return by, descriptions


def _key(fields: Any) -> Key:
    country, indicator, year = fields
    if type(country) is not str or type(indicator) is not str or type(year) is not int:
        raise ValueError("a key that is not [country, indicator, year]")
    return sys.intern(country), sys.intern(indicator), year


def _number(value: object) -> Number:
    if type(value) is int or type(value) is float:
        return value
    raise ValueError("a value that is not a number")


def _job(fields: object, rows: Any) -> HeaderJob:
    """A job from ``[number, offset]`` and its records (``rows``, as marshal read them)."""
    if type(fields) is not list or len(fields) != 2 or type(fields[0]) is not int or type(fields[1]) is not int:
        raise ValueError("a bulk job without its number and offset")
    number, offset = fields
    return number, offset, [(_key(key), _number(value)) for key, value in rows]
