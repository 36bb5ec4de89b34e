"""The journal in-process: its records, group commit, the fsync policies, failures, compaction."""

import errno
import marshal
import os
import threading

import gevent
import pytest
import webtest

from growth_gevent.api.app import create_app
from growth_gevent.config import Config
from growth_gevent.durability import journal as journal_module
from growth_gevent.durability.journal import JournalFailed
from growth_gevent.durability.journal_format import segment_numbers, segment_path
from growth_gevent.durability.journaled import UndoChunk, UndoWrite
from growth_gevent.durability.snapshot import (
    SnapshotLock,
    Snapshotter,
    load_snapshot,
    write_snapshot,
)
from growth_gevent.stores.base import WritesRefused
from growth_gevent.testing import holds_for, wait_for
from tests.helpers.processes import samples
from tests.helpers.recovering import KEY, crashed, folder_fsyncs, opened, records_of


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "growth.snapshot")


def test_every_write_is_a_record_and_a_bulk_job_is_one_record_with_a_marker_per_chunk(path):
    store = opened(path)
    store.put(KEY, 1.5)
    store.delete(KEY)
    store.submit_bulk([(("C", "D", year), year * 0.5) for year in range(3)])
    assert store.wait_idle(5)
    records = records_of(store)
    assert [records[0].partition(b"\n")[0], *records[1:3]] == [b'["segment",1,1,[]]', b'["put","A","B",1,1.5]',
                                                            b'["del","A","B",1]']
    head, _, bulk = records[3].partition(b"\n")
    assert (head, marshal.loads(bulk)) == (b'["bulk",1,0]', [(("C", "D", 0), 0.0), (("C", "D", 1), 0.5),
                                                             (("C", "D", 2), 1.0)])
    assert records[4:] == [b'["applied",1,2]', b'["applied",1,3]']


class HeldFsync:
    """fdatasync blocks until released, and counts its calls; ``fail`` makes it raise ENOSPC."""

    def __init__(self, monkeypatch):
        self.calls = 0
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()
        self.fail = False
        real = os.fdatasync

        def fdatasync(descriptor):
            self.calls += 1
            self.entered.set()
            self.release.wait()
            if self.fail:
                raise OSError(errno.ENOSPC, "No space left on device")
            real(descriptor)

        monkeypatch.setattr(journal_module.os, "fdatasync", fdatasync)

    def hold(self):
        self.entered.clear()
        self.release.clear()


def wait_in_thread(event):
    """Yield to the hub until a thread sets ``event``."""
    wait_for(lambda: gevent.sleep(0.001) or event.is_set())


def test_writes_that_arrive_during_an_fsync_share_the_next_one(path, monkeypatch):
    store = opened(path)
    fsync = HeldFsync(monkeypatch)
    fsync.hold()
    first = gevent.spawn(store.put, ("A", "B", 0), 0)
    wait_in_thread(fsync.entered)
    others = [gevent.spawn(store.put, ("A", "B", year), year) for year in range(1, 30)]
    wait_for(lambda: gevent.sleep(0) or store.copy()["A"]["B"] == {year: year for year in range(30)})  # in memory
    assert not any(greenlet.ready() for greenlet in [first, *others])  # nothing answered before its fsync
    fsync.release.set()
    gevent.joinall([first, *others], raise_error=True)
    assert fsync.calls == 2


def test_a_single_write_is_fsynced_at_once_not_at_a_timer(path, monkeypatch):
    store = opened(path)
    fsync = HeldFsync(monkeypatch)
    monkeypatch.setattr(journal_module, "EVERYSEC_SECONDS", 3600)
    with gevent.Timeout(5):
        store.put(KEY, 1)
    assert fsync.calls == 1


@pytest.mark.parametrize("policy, fsyncs", [("everysec", 1), ("no", 0)])
def test_everysec_acknowledges_before_the_fsync_which_follows_within_a_second_and_no_never_does(
        path, monkeypatch, policy, fsyncs):
    monkeypatch.setattr(journal_module, "EVERYSEC_SECONDS", 0.01)  # the rule, not the second: a faster test
    store = opened(path, policy)
    fsync = HeldFsync(monkeypatch)
    fsync.hold()
    with gevent.Timeout(5):
        store.put(KEY, 1)  # answered while an fsync would still be held
    assert records_of(store)[-1] == b'["put","A","B",1,1]'
    fsync.release.set()
    wait_for(lambda: gevent.sleep(0.001) or fsync.calls == fsyncs, timeout=journal_module.EVERYSEC_SECONDS + 1)
    # Three more intervals, the timer's greenlet running: no other fsync comes.
    holds_for(lambda: gevent.sleep(0.001) or fsync.calls == fsyncs, 3 * journal_module.EVERYSEC_SECONDS, interval=0)


def test_a_failed_fsync_answers_refusal_undoes_the_batch_and_later_writes_and_refuses_writes(path, monkeypatch):
    store = opened(path)
    snapshotter = Snapshotter(store.write_log, SnapshotLock(path), interval=3600, stop_writes_on_error=True)
    store.put(("A", "B", 1), 1)
    fsync = HeldFsync(monkeypatch)
    fsync.hold()
    fsync.fail = True
    first = gevent.spawn(store.put, ("A", "B", 1), 2)
    wait_in_thread(fsync.entered)
    later = [gevent.spawn(store.put, ("A", "B", 2), 3), gevent.spawn(store.delete, ("A", "B", 1)),
             gevent.spawn(store.submit_bulk, [(("A", "B", 9), 9)])]
    wait_for(lambda: gevent.sleep(0) or store.copy() == {"A": {"B": {2: 3}}})  # in memory
    assert not any(greenlet.ready() for greenlet in [first, *later])  # visible, not answered yet
    fsync.release.set()
    gevent.joinall([first, *later])
    for greenlet in [first, *later]:
        assert isinstance(greenlet.exception, WritesRefused)
        assert "the journal could not be written: [Errno 28] No space left on device" in str(greenlet.exception)
    assert store.copy() == {"A": {"B": {1: 1}}}
    assert store.bulk_status().jobs_accepted == 0
    with pytest.raises(WritesRefused, match="writes are refused until a snapshot succeeds: the journal could not"):
        store.put(("A", "B", 5), 5)
    assert store.get(("A", "B", 1)) == 1  # reads go on
    fsync.fail = False
    assert crashed(store) == {"A": {"B": {1: 1}}}

    assert snapshotter.save_if_changed() is True
    store.put(("A", "B", 5), 5)
    assert crashed(store) == store.copy() == {"A": {"B": {1: 1, 5: 5}}}


def test_an_undone_write_keeps_the_value_of_a_chunk_applied_after_it(path):
    store = opened(path)
    store.put(("A", "B", 1), 1)
    store.put(("A", "B", 2), 2)
    chunk = [(("A", "B", 1), 7)]
    store.apply_records(chunk)  # as the applier does, between the two writes' undo entries
    undo = [UndoWrite(("A", "B", 1), None), UndoChunk(chunk), UndoWrite(("A", "B", 2), None)]
    store.write_log._undo("disk full", undo)
    assert store.copy() == {"A": {"B": {1: 7}}}


def test_a_snapshot_starts_a_segment_and_removes_the_old_ones_once_durable(path):
    store = opened(path)
    snapshotter = Snapshotter(store.write_log, SnapshotLock(path), interval=3600, stop_writes_on_error=True)
    store.put(KEY, 1)
    assert snapshotter.save_if_changed() is True
    assert segment_numbers(path) == [2]
    assert load_snapshot(path)[:3] == ([(KEY, 1)], 2, {})
    store.put(KEY, 2)
    assert crashed(store) == {"A": {"B": {1: 2}}}


def test_a_crash_before_the_snapshot_is_renamed_or_before_the_old_segments_are_removed_loses_nothing(path):
    store = opened(path, chunk_size=2)
    store.put(KEY, 1)
    store.submit_bulk([(("C", "D", year), year) for year in range(7)])
    wait_for(lambda: gevent.sleep(0) or store.bulk_status().applied > 0)  # the applier applies a chunk or two
    countries, _, segment, batch = store.write_log.start_snapshot()  # the snapshot begins: copy and segment 2
    batch.wait()
    store.put(KEY, 2)
    assert store.wait_idle(5)
    store.write_log.journal.flush()
    assert crashed(store) == store.copy()  # before the rename: no snapshot, segments 1 and 2 (and 3)
    rows = [((c, i, y), v) for c, indicators in countries.items() for i, series in indicators.items()
            for y, v in series.items()]
    write_snapshot(path, rows, segment, store=store.write_log.journal.stamp[0])
    assert crashed(store) == store.copy()  # after it, before segment 1 is removed: skipped


def test_a_job_queued_across_a_snapshot_is_relogged_in_the_new_segment(path):
    store = opened(path, chunk_size=2)
    snapshotter = Snapshotter(store.write_log, SnapshotLock(path), interval=3600, stop_writes_on_error=True)
    store.submit_bulk([(("C", "D", year), year) for year in range(9)])
    wait_for(lambda: gevent.sleep(0) or store.bulk_status().applied > 0)
    assert snapshotter.save_if_changed() is True
    assert segment_numbers(path) == [2]
    store.close()  # killed: the rest of the job was never applied
    again = opened(path)
    assert again.wait_idle(5)
    assert again.copy() == {"C": {"D": {year: year for year in range(9)}}}


def test_a_graceful_stop_leaves_the_last_snapshot_and_an_empty_log(path):
    store = opened(path)
    snapshotter = Snapshotter(store.write_log, SnapshotLock(path), interval=3600, stop_writes_on_error=True)
    snapshotter.start()
    store.put(KEY, 1)
    snapshotter.stop()
    store.close()
    assert segment_numbers(path) == []
    assert opened(path).copy() == {"A": {"B": {1: 1}}}


def test_metrics_give_the_journal_size_its_records_and_its_fsyncs(path):
    store = opened(path)
    client = webtest.TestApp(create_app(store, Config()))
    snapshotter = Snapshotter(store.write_log, SnapshotLock(path), interval=3600, stop_writes_on_error=True)
    for year in range(3):
        client.put_json(f"/api/v1/growth/A/B/{year}", {"value": year})
    metrics = samples(client)
    assert metrics[("growth_journal_records_total", ())] == 3
    assert metrics[("growth_journal_fsync_duration_seconds_count", ())] == 3  # one client: one per PUT
    assert metrics[("growth_journal_bytes", ())] == os.path.getsize(segment_path(path, 1))
    snapshotter.save_if_changed()
    assert samples(client)[("growth_journal_bytes", ())] == os.path.getsize(segment_path(path, 2))


def test_a_segment_that_cannot_start_fails_alone_and_is_started_again_with_its_number(path, monkeypatch):
    store = opened(path)
    snapshotter = Snapshotter(store.write_log, SnapshotLock(path), interval=3600, stop_writes_on_error=True)
    real_open = journal_module.os.open

    def no_room_for_segment_2(name, *args):
        if name == segment_path(path, 2):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(name, *args)

    monkeypatch.setattr(journal_module.os, "open", no_room_for_segment_2)
    written = gevent.spawn(store.put, KEY, 1)
    gevent.sleep(0)  # the PUT is applied and appended, its batch not yet written
    with pytest.raises(JournalFailed):
        snapshotter.save_if_changed()
    assert written.get() is True  # appended before the new segment: written, and answered
    with pytest.raises(WritesRefused):
        store.put(KEY, 2)
    monkeypatch.setattr(journal_module.os, "open", real_open)
    assert snapshotter.save_if_changed() is True
    assert segment_numbers(path) == [2]
    assert crashed(store) == {"A": {"B": {1: 1}}}


def test_a_segment_whose_header_cannot_be_written_leaves_no_file_and_keeps_its_number(path, monkeypatch):
    store = opened(path)
    snapshotter = Snapshotter(store.write_log, SnapshotLock(path), interval=3600, stop_writes_on_error=True)
    store.put(KEY, 1)
    real_write = journal_module.os.write

    def disk_full(descriptor, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal_module.os, "write", disk_full)
    for _ in range(3):  # a full disk, tried again and again
        with pytest.raises(JournalFailed):
            snapshotter.save_if_changed()
        assert segment_numbers(path) == [1]
    monkeypatch.setattr(journal_module.os, "write", real_write)
    assert snapshotter.save_if_changed() is True
    assert segment_numbers(path) == [2]
    store.put(KEY, 2)
    assert crashed(store) == {"A": {"B": {1: 2}}}


def test_each_segment_created_or_removed_is_on_disk_by_an_fsync_of_its_folder(path, monkeypatch):
    """What a crash of the machine (not only of the process) finds after each step: a new segment, the
    snapshot renamed into place, the old segment gone, and at a graceful close the new one, empty, gone
    too: each once its folder is fsynced."""
    fsyncs = folder_fsyncs(monkeypatch)
    store = opened(path)
    snapshotter = Snapshotter(store.write_log, SnapshotLock(path), interval=3600, stop_writes_on_error=True)
    store.put(KEY, 1)
    assert snapshotter.save_if_changed() is True
    store.close()
    first, second = (os.path.basename(segment_path(path, number)) for number in (1, 2))
    snapshot, lock = os.path.basename(path), os.path.basename(path) + ".lock"
    assert [names for _, names in fsyncs] == [
        [first], [first, second, lock], [snapshot, first, second, lock], [snapshot, second, lock], [snapshot, lock]]
    assert {folder for folder, _ in fsyncs} == {os.path.realpath(os.path.dirname(path))}
