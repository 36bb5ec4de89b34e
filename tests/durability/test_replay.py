"""Reading the journal back: replay reaches the store's state, torn tails are dropped, damage stops it."""

import marshal
import os
import pathlib
import struct
import zlib

import gevent
import pytest

from growth_gevent.durability.identity import Identity, current_boot_id
from growth_gevent.durability.journal_format import SEGMENT_MAGIC, frame, put_record, segment_numbers, segment_path
from growth_gevent.durability.replay import JournalDamaged, QueuedJob, TornTail
from tests.helpers.recovering import KEY, crashed, journaled, opened


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "growth.snapshot")



def test_a_replay_reaches_the_store_state_and_again_changes_nothing(path):
    store = opened(path)
    gevent.joinall([gevent.spawn(store.put, ("A", "B", year), year) for year in range(20)], raise_error=True)
    store.delete(("A", "B", 3))
    store.put(("A", "B", 4), 40)
    store.submit_bulk([(("A", "B", year), -year) for year in range(10, 15)])
    assert store.wait_idle(5)
    store.write_log.journal.flush()
    assert crashed(store) == store.copy()
    assert crashed(store) == store.copy()  # the first recovery's own segment changes nothing


def test_chunks_are_replayed_where_they_were_applied_among_later_writes(path):
    store = opened(path)
    store.submit_bulk([(("A", "B", year), 1) for year in range(6)])  # 3 chunks of 2
    store.put(("A", "B", 5), 99)  # before the applier reached that chunk: the chunk overwrites it
    assert store.wait_idle(5)
    store.put(("A", "B", 0), 42)  # after
    assert store.get(("A", "B", 5)) == 1
    assert crashed(store) == store.copy() == {"A": {"B": {0: 42, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1}}}


def test_a_job_accepted_and_not_applied_is_queued_again_at_start(path):
    store = opened(path)
    store.submit_bulk([(("A", "B", year), year) for year in range(5)])
    store.close()  # the applier stops before applying anything: the process died
    again = opened(path)
    assert again.bulk_status().jobs_accepted == 1
    assert again.wait_idle(5)
    assert again.copy() == {"A": {"B": {year: year for year in range(5)}}}


def test_a_torn_last_record_is_dropped_and_what_comes_before_is_kept(path):
    store = opened(path)
    store.put(KEY, 1)
    store.put(("A", "B", 2), 2)
    store.close()
    segment = segment_path(path, 1)
    whole = pathlib.Path(segment).read_bytes()
    pathlib.Path(segment).write_bytes(whole[:-3])
    again = journaled(path, queue_records=100, max_records=100)
    [torn] = again.write_log.recover(0, Identity()).torn
    assert again.copy() == {"A": {"B": {1: 1}}}
    at = len(whole) - len(put_record(("A", "B", 2), 2))
    assert torn == TornTail(segment, at, len(whole) - 3 - at, "a record cut short", 1)
    assert torn.dropped("always") == (f"{len(whole) - 3 - at} bytes from byte {at} (a record cut short): 1 record "
                                      "cut short, never acknowledged: under GROWTH_FSYNC=always a write is answered "
                                      "only once its record is on disk")
    assert torn.dropped("everysec").endswith(
        "1 record cut short, which under GROWTH_FSYNC=everysec may have been acknowledged if the machine itself "
        "stopped (power loss, kernel crash) within a second of the write, but not if only the process was killed")


def one_write_and(path, tail):
    store = opened(path)
    store.put(KEY, 1)
    store.close()
    with open(segment_path(path, 1), "ab") as segment:
        segment.write(tail)


CHANGED = [b"\0" * 20, frame(b'["put","A","B",2,2]')[:-1] + b"!"]  # every byte there, but not as written


@pytest.mark.parametrize("tail", [b"\x10\0\0\0", frame(b'["put","A","B",2,2]')[:-1]])
def test_a_last_record_or_header_cut_short_is_a_torn_tail(path, tail):
    one_write_and(path, tail)
    assert opened(path).copy() == {"A": {"B": {1: 1}}}


@pytest.mark.parametrize("tail", CHANGED, ids=["zeros", "a record changed"])
def test_a_changed_last_record_is_damage_when_the_machine_did_not_restart_since(path, tail):
    one_write_and(path, tail)
    at = os.path.getsize(segment_path(path, 1)) - len(tail)
    with pytest.raises(JournalDamaged, match=f"is damaged: a record (header )?whose checksum does not match at byte "
                                             f"{at}, every byte of it there, and the machine has not restarted since"):
        opened(path)


@pytest.mark.parametrize("tail", CHANGED, ids=["zeros", "a record changed"])
def test_a_changed_last_record_after_a_restart_is_dropped_saying_it_may_have_been_acknowledged(path, tail):
    one_write_and(path, tail)
    again = journaled(path, boot_id=lambda: "another boot")
    [torn] = again.write_log.recover(0, Identity()).torn
    assert again.copy() == {"A": {"B": {1: 1}}}
    assert torn.whole and torn.boots == (current_boot_id(), "another boot")
    assert torn.dropped("always").endswith(
        f"every byte of it there): the machine restarted since the segment was written (boot id {current_boot_id()}, "
        "now another boot), so a crash of the machine may have left it, and so may the disk: it may have been "
        "acknowledged, and it is lost")


def test_a_changed_last_record_read_where_no_boot_id_is_known_says_so_not_that_its_segment_names_none(path):
    """A segment that names its boot, read where the system gives none (no /proc in a container): dropped, and
    the words blame what is missing, this system's boot id, not the segment."""
    one_write_and(path, CHANGED[1])
    [torn] = journaled(path, boot_id=lambda: None).write_log.recover(0, Identity()).torn
    assert torn.boots == (current_boot_id(), None)
    said = torn.dropped("always")
    assert f"(boot id {current_boot_id()}), but this system gives no boot id now to tell whether" in said
    assert "its segment does not say" not in said


def three_writes_with_a_bit_flipped_in_the_middle_one(path, flipped):
    """The segment, its bytes as damaged, and where the middle record and the one after it begin."""
    store = opened(path)
    for year in range(3):
        store.put(("A", "B", year), year)
    store.close()
    segment = pathlib.Path(segment_path(path, 1))
    data = bytearray(segment.read_bytes())
    middle = len(data) - 2 * len(put_record(KEY, 1))
    data[middle + flipped] ^= 0x10
    segment.write_bytes(data)
    return segment, data, middle, middle + len(put_record(KEY, 1))


def test_a_damaged_record_before_the_last_stops_recovery_and_leaves_the_files_untouched(path):
    segment, data, middle, after = three_writes_with_a_bit_flipped_in_the_middle_one(path, 14)  # in its payload
    with pytest.raises(JournalDamaged, match=f"{segment} is damaged: a record whose checksum does not match at "
                                             f"byte {middle}, with a valid record at byte {after} after it"):
        opened(path)
    assert segment.read_bytes() == data
    assert segment_numbers(path) == [1]


@pytest.mark.parametrize("flipped", [3, 0, 5, 9])  # the length's high and low bytes, its checksum, the header's
def test_a_damaged_record_header_is_damage_even_when_its_length_runs_past_the_end(path, flipped):
    segment, _, middle, after = three_writes_with_a_bit_flipped_in_the_middle_one(path, flipped)
    with pytest.raises(JournalDamaged, match=f"{segment} is damaged: a record header whose checksum does not match "
                                             f"at byte {middle}, with a valid record at byte {after} after it"):
        opened(path)


def test_a_damaged_segment_magic_is_damage(path):
    store = opened(path)
    store.put(KEY, 1)
    store.close()
    segment = pathlib.Path(segment_path(path, 1))
    segment.write_bytes(b"X" + segment.read_bytes()[1:])
    with pytest.raises(JournalDamaged, match=f"{segment} is damaged: .* at byte 0, with a valid record at byte 8"):
        opened(path)


def test_a_segment_of_a_later_format_version_is_refused_naming_it(path):
    opened(path).close()
    segment = pathlib.Path(segment_path(path, 1))
    segment.write_bytes(SEGMENT_MAGIC[:-1] + b"\x07")
    with pytest.raises(JournalDamaged, match=f"{segment} is journal format version 7; this version of growth-gevent "
                                             "reads versions 1 to 4"):
        opened(path)


def test_a_version_1_segment_without_magic_or_header_checksum_is_replayed(path):
    def frame_v1(payload):
        return struct.pack("<II", len(payload), zlib.crc32(payload)) + payload

    pathlib.Path(segment_path(path, 1)).write_bytes(
        frame_v1(b'["segment",1,1,[]]\n' + marshal.dumps([])) + frame_v1(b'["put","A","B",1,1.5]')
        + frame_v1(b'["put","A","B",2,2.5]')[:-2])
    assert opened(path).copy() == {"A": {"B": {1: 1.5}}}


def test_a_missing_segment_is_damage(path):
    store = opened(path)
    store.put(KEY, 1)
    store.close()
    opened(path).close()
    opened(path).close()
    os.unlink(segment_path(path, 2))
    with pytest.raises(JournalDamaged, match="missing between 1 and 3"):
        opened(path)


def test_a_queued_job_stands_for_the_records_it_has_left():
    job = QueuedJob(4, 10, [(("A", "B", year), year) for year in range(10, 15)], applied=12)
    assert job.remainder() == [(("A", "B", year), year) for year in (12, 13, 14)]
