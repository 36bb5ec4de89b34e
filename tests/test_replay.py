"""Reading the journal back: replay reaches the store's state, torn tails are dropped, damage stops it."""

import logging
import os
import pathlib

import gevent
import pytest

from growth_gevent.durability.journal import frame, put_record, segment_numbers, segment_path
from growth_gevent.durability.replay import JournalDamaged, QueuedJob

from recovering import KEY, crashed, opened


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
    store.journal.flush()
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


def test_a_torn_last_record_is_dropped_with_a_warning_and_what_comes_before_is_kept(path, caplog):
    store = opened(path)
    store.put(KEY, 1)
    store.put(("A", "B", 2), 2)
    store.close()
    segment = segment_path(path, 1)
    whole = pathlib.Path(segment).read_bytes()
    pathlib.Path(segment).write_bytes(whole[:-3])
    with caplog.at_level(logging.WARNING):
        assert opened(path).copy() == {"A": {"B": {1: 1}}}
    assert f"{segment} ends in a torn record at byte {len(whole) - len(put_record(('A', 'B', 2), 2))}" in caplog.text


@pytest.mark.parametrize("tail", [b"\0" * 20, b"\x10\0\0\0", frame(b'["put","A","B",2,2]')[:-1] + b"!"])
def test_zeros_a_cut_header_or_a_last_record_that_does_not_match_are_a_torn_tail(path, tail):
    store = opened(path)
    store.put(KEY, 1)
    store.close()
    with open(segment_path(path, 1), "ab") as segment:
        segment.write(tail)
    assert opened(path).copy() == {"A": {"B": {1: 1}}}


def test_a_damaged_record_before_the_last_stops_recovery_and_leaves_the_files_untouched(path):
    store = opened(path)
    for year in range(3):
        store.put(("A", "B", year), year)
    store.close()
    segment = pathlib.Path(segment_path(path, 1))
    data = bytearray(segment.read_bytes())
    data[len(data) - 2 * len(put_record(KEY, 1)) + 10] ^= 1  # in the middle record
    segment.write_bytes(data)
    with pytest.raises(JournalDamaged, match=f"{segment} is damaged: a record whose checksum does not match at "
                                             "byte .*, with data after it"):
        opened(path)
    assert segment.read_bytes() == data
    assert segment_numbers(path) == [1]


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
