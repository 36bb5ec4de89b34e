"""The journal's format, the one module that the writer and the reader share: the bytes it writes are those
segments on disk hold (written by the code before the format had a module of its own), and what it writes it
reads back."""

import zlib

import pytest

from growth_gevent.durability.journal_format import (
    applied_record,
    bulk_record,
    delete_record,
    link_record,
    parse_link,
    parse_record,
    put_record,
    segment_record,
)

KEY = ("BRZ", "NGDP_R", 2002)
RECORDS = [(KEY, 183.26), (("BRZ", "NGDP_R", 2003), 7)]
# kind: (the record, and its length and CRC-32 as growth-gevent wrote it before, at 97dc9d2). Not the bulk
# and segment records: their records are in marshal, whose bytes depend on which objects are shared.
FRAMED = {
    "put": (put_record(KEY, 183.26), 46, 0x500723AB),
    "del": (delete_record(KEY), 39, 0x7756A26B),
    "applied": (applied_record(4, 3), 27, 0x92710C11),
    "link": (link_record((2, 130, 0xDEADBEEF)), 40, 0x4B3283D8),
    "link to nothing held": (link_record((0, None, None)), 35, 0x4C8B861D),
}


def test_a_put_is_framed_as_segments_on_disk_hold_it():
    assert put_record(KEY, 183.26) == b'"\x00\x00\x002\xd4\x8f\x89\x84\xa8\xac&["put","BRZ","NGDP_R",2002,183.26]'


@pytest.mark.parametrize("kind", FRAMED)
def test_every_kind_is_written_byte_for_byte_as_before(kind):
    record, length, crc = FRAMED[kind]
    assert (len(record), zlib.crc32(record)) == (length, crc)


def test_what_the_writer_frames_the_reader_parses_back():
    payload = slice(12, None)  # after the frame's length, payload CRC and header CRC
    assert parse_record(put_record(KEY, 183.26)[payload]) == ("put", KEY, 183.26)
    assert parse_record(delete_record(KEY)[payload]) == ("del", KEY, None)
    assert parse_record(bulk_record(4, 2, RECORDS)[payload]) == ("bulk", (4, 2, RECORDS))
    assert parse_record(applied_record(4, 3)[payload]) == ("applied", 4, 3)
    assert parse_record(segment_record(3, 5, [(4, 2, RECORDS)])[payload]) == ("segment", 3, 5, [(4, 2, RECORDS)])
    assert parse_link(link_record((2, 130, 7))[payload]) == (2, 130, 7)
    assert parse_link(link_record((0, None, None))[payload]) == (0, None, None)
    assert parse_link(put_record(KEY, 1)[payload]) is None
