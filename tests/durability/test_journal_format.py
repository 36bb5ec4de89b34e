"""The journal's format, the one module that the writer and the reader share: the bytes it writes are those
segments on disk hold (written by the code before the format had a module of its own), and what it writes it
reads back."""

import zlib

import pytest

from growth_gevent.durability.journal_format import (
    applied_record,
    bulk_record,
    delete_record,
    frame,
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
}
STORE, BOOT = "0123456789abcdef0123456789abcdef", "3f1c2b8e-5d9a-4c1e-9b7f-0a2d4e6f8a1c"


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
    assert parse_link(link_record((2, 130, 7), (STORE, BOOT))[payload], 4) == ((2, 130, 7), (STORE, BOOT))
    assert parse_link(link_record((0, None, None), (STORE, None))[payload], 4) == ((0, None, None), (STORE, None))
    assert parse_link(put_record(KEY, 1)[payload], 4) is None


def test_a_link_names_the_store_and_the_boot_after_the_segment_before():
    assert link_record((2, 130, 7), (STORE, BOOT)) == frame(b'["follows",2,130,7,"%s","%s"]' % (STORE.encode(),
                                                                                                 BOOT.encode()))


def test_a_version_3_link_as_it_was_written_is_read_without_store_or_boot():
    written = frame(b'["follows",2,130,3735928559]')  # as growth-gevent wrote it before, at 97dc9d2
    assert (len(written), zlib.crc32(written)) == (40, 0x4B3283D8)
    assert parse_link(written[12:], 3) == ((2, 130, 0xDEADBEEF), (None, None))
    assert parse_link(frame(b'["follows",0,null,null]')[12:], 3) == ((0, None, None), (None, None))
    assert parse_link(written[12:], 4) is None  # a version 4 link has six fields
