"""The chain of segments in-process (issue 34): each segment's link holds the length and CRC-32 of the one
before as the writer left it, replay verifies it before applying anything, and start-up cuts a torn tail or
writes again a segment that holds nothing before it goes on."""

import errno
import pathlib
import zlib

import pytest

from growth_gevent.durability import journal as journal_module
from growth_gevent.durability.check import check
from growth_gevent.durability.identity import current_boot_id
from growth_gevent.durability.journal_format import SEGMENT_MAGIC, frame, put_record, segment_numbers, segment_path
from growth_gevent.durability.replay import JournalDamaged, read_segment
from growth_gevent.durability.snapshot import write_snapshot
from tests.helpers.durability import frame_v2_segment
from tests.helpers.recovering import KEY, crashed, opened


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "growth.snapshot")


def segment(path, number):
    return pathlib.Path(segment_path(path, number))


def rotated(store):
    """The store's journal goes on in a new segment, as a snapshot begins one."""
    _, _, number, batch = store.write_log.start_snapshot()
    batch.wait()
    return number


def two_segments(path):
    store = opened(path)
    store.put(KEY, 1)
    assert rotated(store) == 2
    store.put(("A", "B", 2), 2)
    store.close()
    return segment(path, 1), segment(path, 2)


def test_each_segment_names_the_length_and_crc_of_the_one_before_as_written(path):
    first, second = two_segments(path)
    assert read_segment(str(first)).follows == (0, None, None)  # segment 1 follows nothing
    data = first.read_bytes()
    assert read_segment(str(second)).follows == (1, len(data), zlib.crc32(data))
    store, boot = read_segment(str(second)).stamp
    assert read_segment(str(first)).stamp == (store, boot) and boot == current_boot_id()
    assert second.read_bytes().startswith(SEGMENT_MAGIC + frame(b'["follows",1,%d,%d,"%s","%s"]' % (
        len(data), zlib.crc32(data), store.encode(), boot.encode())))


def test_a_segment_begun_after_a_snapshot_that_held_the_one_before_names_no_length(path):
    write_snapshot(path, [(KEY, 1)], journal=4)
    opened(path).put(KEY, 2)
    assert segment_numbers(path) == [4]
    assert read_segment(str(segment(path, 4))).follows == (3, None, None)


def test_a_record_replaced_by_another_of_the_same_length_is_told_by_the_crc(path):
    first, second = two_segments(path)
    first.write_bytes(first.read_bytes().replace(put_record(KEY, 1), put_record(KEY, 7)))
    with pytest.raises(JournalDamaged, match=f"{first} is damaged: its {first.stat().st_size} bytes do not match the "
                                             f"CRC-32 that {second} holds of them"):
        opened(path)


def test_records_appended_to_a_segment_that_has_a_successor_are_damage(path):
    first, second = two_segments(path)
    size = first.stat().st_size
    with first.open("ab") as appended:
        appended.write(put_record(KEY, 9))
    with pytest.raises(JournalDamaged, match=f"{first} is damaged: {len(put_record(KEY, 9))} bytes after byte {size}, "
                                             f"where {second} says it ended"):
        opened(path)


def test_a_segment_renamed_is_damage_naming_its_link(path):
    first, second = two_segments(path)
    opened(path).close()  # segment 3: the start's own
    second.unlink()
    segment(path, 3).rename(second)
    with pytest.raises(JournalDamaged, match=f"{second} is damaged: its link at byte 8 names segment 2 before it"):
        opened(path)


def test_a_segment_begun_after_a_snapshot_is_damage_once_that_snapshot_is_gone(path):
    store = opened(path)
    store.put(KEY, 1)
    store.close()
    # as a snapshot of the store that held segment 1, its removal failed
    write_snapshot(path, [(KEY, 1)], journal=2, store=store.write_log.journal.stamp[0])
    opened(path).put(KEY, 2)
    pathlib.Path(path).unlink()
    with pytest.raises(JournalDamaged, match=f"{segment(path, 2)} began after a snapshot that held {segment(path, 1)} "
                                             f"and the segments before it, and the snapshot {path} is missing"):
        opened(path)


def test_a_failed_batch_that_could_not_be_cut_is_cut_before_the_next_segment_begins(path, monkeypatch):
    store = opened(path)
    store.put(KEY, 1)
    kept = segment(path, 1).stat().st_size
    fdatasync, ftruncate = journal_module.os.fdatasync, journal_module.os.ftruncate

    def failing(_descriptor, *_):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(journal_module.os, "fdatasync", failing)
    monkeypatch.setattr(journal_module.os, "ftruncate", failing)
    with pytest.raises(Exception, match="Input/output error"):
        store.put(("A", "B", 2), 2)
    assert segment(path, 1).stat().st_size > kept  # written, not fsynced, and not cut
    monkeypatch.setattr(journal_module.os, "fdatasync", fdatasync)
    monkeypatch.setattr(journal_module.os, "ftruncate", ftruncate)
    assert rotated(store) == 2
    assert segment(path, 1).stat().st_size == kept
    assert read_segment(str(segment(path, 2))).follows[1] == kept
    assert crashed(store) == {"A": {"B": {1: 1}}}


@pytest.mark.parametrize("left", [b"", SEGMENT_MAGIC[:5], SEGMENT_MAGIC, SEGMENT_MAGIC + frame(b'["follows",1,')[:9]])
def test_a_newest_segment_that_holds_no_record_is_written_again_under_its_number(path, left):
    store = opened(path)
    store.put(KEY, 1)
    store.close()
    segment(path, 2).write_bytes(left)  # a crash as segment 2 began
    said = []
    assert check(path, say=said.append) == (1 if left.strip(b"\0") and left != SEGMENT_MAGIC else 0)
    assert f"{segment(path, 2)}: holds no record: created as the server stopped; the next start writes it again" in said
    again = opened(path)
    assert segment_numbers(path) == [1, 2]
    again.put(("A", "B", 2), 2)
    assert crashed(again) == {"A": {"B": {1: 1, 2: 2}}}
    assert check(path, say=said.append) == 0


def test_version_2_segments_are_replayed_and_the_first_version_3_one_links_to_the_last(path):
    """An upgrade after a crash: version 2 did not cut a torn tail at start-up, so one before a version 2
    segment is dropped as it was; the newest is cut, and the segment begun after it names its length."""
    segment(path, 1).write_bytes(frame_v2_segment(1, put_record(KEY, 1), put_record(("A", "B", 2), 2)[:-2]))
    segment(path, 2).write_bytes(frame_v2_segment(2, put_record(("A", "B", 3), 3), b"\x10\0\0"))
    store = opened(path)
    assert store.copy() == {"A": {"B": {1: 1, 3: 3}}}
    data = segment(path, 2).read_bytes()
    assert not data.endswith(b"\x10\0\0")
    assert read_segment(str(segment(path, 3))).follows == (2, len(data), zlib.crc32(data))
    store.put(KEY, 10)
    assert crashed(store) == {"A": {"B": {1: 10, 3: 3}}}
