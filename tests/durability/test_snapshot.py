import fcntl
import functools
import json
import logging
import os
import re
import zlib

import pytest

from growth_gevent.core.logs import ThrottledLog
from growth_gevent.durability import journal as journal_module
from growth_gevent.durability.snapshot import (
    FORMAT,
    SnapshotError,
    SnapshotInUse,
    SnapshotLock,
    Snapshotter,
    load_snapshot,
    read_snapshot,
    temporary_path,
    write_snapshot,
)
from growth_gevent.stores.base import SnapshotStatus, WritesRefused
from tests.helpers.recovering import folder_fsyncs, opened

ITEMS = [(("BRZ", "NGDP_R", 2002), 183.26), (("ABW", "X", -5), 7), (("Z", "Y", 1), 1e300)]


def test_a_snapshot_reads_back_exactly(tmp_path):
    path = tmp_path / "snapshot.json"
    write_snapshot(str(path), ITEMS)
    assert read_snapshot(str(path)) == ITEMS
    assert [type(value) for _, value in read_snapshot(str(path))] == [float, int, float]


def test_a_snapshot_is_renamed_into_place_and_then_its_folder_fsynced(tmp_path, monkeypatch):
    fsyncs = folder_fsyncs(monkeypatch)
    write_snapshot(str(tmp_path / "snapshot.json"), ITEMS)
    assert fsyncs == [(os.path.realpath(tmp_path), ["snapshot.json"])]  # the rename itself is on disk


def test_an_empty_store_makes_a_valid_snapshot(tmp_path):
    path = tmp_path / "snapshot.json"
    write_snapshot(str(path), [])
    assert read_snapshot(str(path)) == []


def test_the_format_is_the_documented_one(tmp_path):
    path = tmp_path / "snapshot.json"
    write_snapshot(str(path), ITEMS[:1], store="0123456789abcdef0123456789abcdef")
    document, checksum = path.read_bytes().splitlines(keepends=True)
    assert json.loads(document) == {"format": FORMAT, "version": 3, "store": "0123456789abcdef0123456789abcdef",
                                    "count": 1, "records": [["BRZ", "NGDP_R", 2002, 183.26]]}
    assert checksum == b"crc32 %08x\n" % zlib.crc32(document)
    assert load_snapshot(str(path)) == (ITEMS[:1], 0, {}, "0123456789abcdef0123456789abcdef")


def test_a_version_2_snapshot_names_no_store_and_is_read_with_a_warning(tmp_path, caplog):
    path = tmp_path / "growth.snapshot"
    document = b'{"format":"growth-gevent-snapshot","version":2,"count":1,"journal":3,"records":[["A","B",1,2]]}\n'
    path.write_bytes(document + b"crc32 %08x\n" % zlib.crc32(document))
    assert load_snapshot(str(path)) == ([(("A", "B", 1), 2)], 3, {}, None)
    assert f"{path} is snapshot version 2, which names no store: read as it is" in caplog.text


@pytest.mark.parametrize("store", [None, 12, "ABC"])
def test_a_version_3_snapshot_without_its_store_is_damage(tmp_path, store):
    path = tmp_path / "growth.snapshot"
    document = b'{"format":"growth-gevent-snapshot","version":3,%s"count":0,"records":[]}\n' % (
        b"" if store is None else b'"store":%s,' % json.dumps(store).encode())
    path.write_bytes(document + b"crc32 %08x\n" % zlib.crc32(document))
    with pytest.raises(SnapshotError, match=f"{path} is damaged: it does not name its store"):
        load_snapshot(str(path))


@pytest.mark.parametrize("before, after", [(b"183.26", b"183.27"), (b"NGDP_R", b"LGDP_R"), (b'"count"', b'"co5nt"'),
                                           (b"crc32 ", b"crc32\x00")])
def test_a_bit_flipped_anywhere_is_refused_naming_the_file_and_what_to_do(tmp_path, before, after):
    path = tmp_path / "growth.snapshot"
    write_snapshot(str(path), ITEMS)
    damaged = path.read_bytes().replace(before, after)
    path.write_bytes(damaged)
    with pytest.raises(SnapshotError) as refused:
        read_snapshot(str(path))
    assert str(refused.value).startswith(f"{path} is damaged: ")
    assert "Restore it from a backup" in str(refused.value)
    assert path.read_bytes() == damaged


def test_a_snapshot_of_version_2_cut_before_its_checksum_is_refused(tmp_path):
    path = tmp_path / "growth.snapshot"
    write_snapshot(str(path), ITEMS)
    path.write_bytes(path.read_bytes().splitlines(keepends=True)[0])
    with pytest.raises(SnapshotError, match=f"{path} is damaged: its checksum line is missing"):
        read_snapshot(str(path))


def test_a_version_1_snapshot_without_a_checksum_is_read_with_a_warning(tmp_path, caplog):
    path = tmp_path / "growth.snapshot"
    path.write_bytes(b'{"format": "growth-gevent-snapshot", "version": 1, "count": 1, "records": [["A", "B", 1, 2]]}')
    with caplog.at_level(logging.WARNING):
        assert read_snapshot(str(path)) == [(("A", "B", 1), 2)]
    assert f"{path} is snapshot version 1, which has no checksum" in caplog.text


def test_a_failed_write_leaves_the_previous_snapshot_and_no_temporary_file(tmp_path):
    path = tmp_path / "snapshot.json"
    write_snapshot(str(path), ITEMS)
    before = path.read_bytes()
    with pytest.raises(TypeError):
        write_snapshot(str(path), ITEMS * 2000 + [(("A", "B", 1), object())])
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["snapshot.json"]


@pytest.mark.parametrize("content, message", [
    (None, "truncated or not JSON"),
    (b"hello", "truncated or not JSON"),
    (b'{"some": "json"}', "is not a growth-gevent snapshot"),
    (b"[1, 2]", "is not a growth-gevent snapshot"),
    (b'{"format": "growth-gevent-snapshot", "version": 4, "count": 0, "records": []}', "version 4"),
    (b'{"format": "growth-gevent-snapshot", "version": 1, "count": 5, "records": []}', "count does not match"),
    (b'{"format": "growth-gevent-snapshot", "version": 1, "count": 1, "records": [["A", "B", "1", 2]]}',
     "record 0 is not"),
    (b'{"format": "growth-gevent-snapshot", "version": 1, "count": 1, "records": [["", "B", 1, 2]]}',
     "record 0 is not"),
    (b'{"format": "growth-gevent-snapshot", "version": 1, "count": 2, "records": [["A", "B", 1, 2], ["A", "b", 1, 2]]}',
     "record 1 is not .* with upper-case names"),
    (b'{"format": "growth-gevent-snapshot", "version": 1, "count": 3, '
     b'"records": [["A", "B", 1, 2], ["A", "B", 2, 2], ["A", "B", 1, 3]]}',
     "record 2 repeats the country, indicator and year of an earlier record"),
])
def test_an_unusable_snapshot_is_refused_and_left_untouched(tmp_path, content, message):
    path = tmp_path / "snapshot.json"
    if content is None:
        write_snapshot(str(path), ITEMS)
        content = path.read_bytes()[:-40]
    path.write_bytes(content)
    with pytest.raises(SnapshotError, match=message):
        read_snapshot(str(path))
    assert path.read_bytes() == content


def test_a_second_owner_of_a_snapshot_path_is_refused_naming_the_path_and_the_holder(tmp_path):
    path = str(tmp_path / "growth.snapshot")
    first = SnapshotLock(path)  # noqa: F841 (held while it lives)
    with pytest.raises(SnapshotInUse) as refused:
        SnapshotLock(path)
    assert f"GROWTH_SNAPSHOT {path} is in use by another process (pid {os.getpid()})" in str(refused.value)
    assert f"{path}.lock" in str(refused.value)


def test_the_owner_holds_its_folder_whatever_happens_to_the_lock_file(tmp_path):
    path = str(tmp_path / "growth.snapshot")
    first = SnapshotLock(path)  # noqa: F841 (held while it lives)
    with pytest.raises(SnapshotInUse, match=f"in use by another process \\(pid {os.getpid()}\\), which holds the "
                                            f"lock on its folder {tmp_path}"):
        SnapshotLock(path)
    os.unlink(f"{path}.lock")
    with pytest.raises(SnapshotInUse, match="in use by another process, which holds the lock on its folder "):
        SnapshotLock(path)
    assert sorted(tmp_path.iterdir()) == []  # the refused one created nothing
    other = SnapshotLock(str(tmp_path / "other.snapshot"))  # another store in the folder is its own
    with pytest.raises(SnapshotInUse):
        SnapshotLock(other.path)


def test_a_folder_another_tool_keeps_flocked_is_refused_once_its_turn_has_waited_long_enough(tmp_path):
    # Starters take turns under a flock of the folder; one held by anything else must not hang start-up.
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(folder, fcntl.LOCK_EX)
    try:
        with pytest.raises(SnapshotInUse, match=f"^the folder {tmp_path} is locked \\(flock\\) by another process "
                                                "for over 0.2 s"):
            SnapshotLock(str(tmp_path / "growth.snapshot"), turn_seconds=0.2)
    finally:
        os.close(folder)
    assert sorted(tmp_path.iterdir()) == []
    SnapshotLock(str(tmp_path / "growth.snapshot"), turn_seconds=0.2).close()  # its turn, once let go


def test_only_the_owner_removes_the_temporary_a_killed_writer_left(tmp_path):
    path = str(tmp_path / "growth.snapshot")
    (tmp_path / ".growth.snapshot.tmp").write_text("half")
    (tmp_path / ".growth.snapshot.old.tmp").write_text("the temporary of growth.snapshot.old")
    owner = SnapshotLock(path)  # noqa: F841
    assert sorted(p.name for p in tmp_path.iterdir()) == [".growth.snapshot.old.tmp", "growth.snapshot.lock"]
    (tmp_path / ".growth.snapshot.tmp").write_text("the owner writing")
    with pytest.raises(SnapshotInUse):
        SnapshotLock(path)
    assert (tmp_path / ".growth.snapshot.tmp").read_text() == "the owner writing"


@pytest.fixture
def owned(tmp_path):
    """The lock of a snapshot path in ``tmp_path``."""
    return SnapshotLock(str(tmp_path / "growth.snapshot"))


def test_the_snapshotter_writes_only_when_the_store_changed_or_is_new(owned):
    store = opened(owned.path)
    snapshotter = Snapshotter(store.write_log, owned, interval=3600, stop_writes_on_error=True)
    assert snapshotter.save_if_changed() is True  # a new store's first: a store always leaves a file
    assert read_snapshot(owned.path) == []
    assert snapshotter.save_if_changed() is False
    store.put(("A", "B", 1), 2)
    assert snapshotter.save_if_changed() is True
    assert snapshotter.save_if_changed() is False
    store.delete(("A", "B", 1))
    store.delete(("A", "B", 1))
    assert snapshotter.save_if_changed() is True
    assert read_snapshot(owned.path) == []


class Partner:
    """A durability partner as the snapshotter sees it (``Snapshotted``), with no store and no journal: what
    it tells the partner is all it does besides the file."""

    def __init__(self):
        self.changes, self.failure_log, self.said = 1, ThrottledLog(1, 60, logging.getLogger("test")), []
        self.store_identity = "0123456789abcdef0123456789abcdef"

    def on_failure(self, listener):
        self.said.append("on_failure")

    def needs_snapshot(self):
        return False

    def start_snapshot(self):
        batch = journal_module.Batch()
        batch.finish()
        return {"A": {"B": {1: 2.0}}}, {}, 7, batch

    def remove_before(self, segment):
        self.said.append(f"remove_before {segment}")

    def snapshots_started(self, last_success):
        self.said.append(f"snapshots_started {last_success}")

    def snapshot_written(self, at):
        self.said.append("snapshot_written")

    def snapshot_failed(self, reason, refuse_writes):
        self.said.append(f"snapshot_failed {reason}")


def test_the_snapshotter_talks_to_the_durability_partner_only(owned):
    partner = Partner()
    snapshotter = Snapshotter(partner, owned, interval=3600, stop_writes_on_error=True)
    assert snapshotter.save_if_changed() is False  # no change since it began
    partner.changes += 1
    assert snapshotter.save_if_changed() is True
    assert read_snapshot(owned.path) == [(("A", "B", 1), 2.0)]
    assert load_snapshot(owned.path)[1::2] == (7, partner.store_identity)  # the first segment it does not hold
    assert partner.said == ["on_failure", "snapshots_started None", "remove_before 7", "snapshot_written"]


def test_the_store_is_told_of_the_snapshot_it_was_loaded_from(owned):
    write_snapshot(owned.path, ITEMS)
    os.utime(owned.path, (1234.5, 1234.5))
    store = opened(owned.path)
    Snapshotter(store.write_log, owned, interval=3600, stop_writes_on_error=True)
    assert store.health().snapshots == SnapshotStatus(1234.5, None)


def test_stopping_writes_the_last_changes(owned):
    store = opened(owned.path)
    snapshotter = Snapshotter(store.write_log, owned, interval=3600, stop_writes_on_error=True)
    snapshotter.start()
    store.put(("A", "B", 1), 2)
    snapshotter.stop()
    assert read_snapshot(owned.path) == [(("A", "B", 1), 2)]


class FailingWrites:
    """Snapshot writes of ``owned`` fail (a folder where the temporary file goes) until ``lift()``."""

    def __init__(self, owned):
        self._in_the_way = temporary_path(owned.path)
        os.mkdir(self._in_the_way)

    def lift(self):
        os.rmdir(self._in_the_way)


def test_after_a_failed_snapshot_writes_are_refused_until_one_succeeds(owned, caplog):
    store = opened(owned.path)
    snapshotter = Snapshotter(store.write_log, owned, interval=3600, stop_writes_on_error=True)
    snapshotter.start()
    store.put(("A", "B", 1), 2)
    failing = FailingWrites(owned)
    with pytest.raises(IsADirectoryError):
        snapshotter.save_if_changed()
    with pytest.raises(WritesRefused, match="Is a directory"):
        store.put(("A", "B", 2), 3)
    assert store.get(("A", "B", 1)) == 2
    failing.lift()
    assert snapshotter.save_if_changed() is True
    assert store.put(("A", "B", 2), 3) is True
    snapshotter.stop()
    assert read_snapshot(owned.path) == [(("A", "B", 1), 2), (("A", "B", 2), 3)]
    messages = [re.sub(r" in \d+ ms", "", r.getMessage()) for r in caplog.records if r.levelno >= logging.WARNING]
    assert messages == [
        f"snapshot to {owned.path} failed (1 in a row): [Errno 21] Is a directory: '{temporary_path(owned.path)}'; "
        "writes are refused (503) until a snapshot succeeds; trying again in 1 s, then backing off to 30 s, or as soon "
        "as the disk has room",
        f"snapshot written after 1 failed attempts: 1 records to {owned.path}; writes are accepted again"]


def test_with_stop_writes_off_a_failed_snapshot_leaves_writes_accepted(owned, caplog):
    store = opened(owned.path)
    snapshotter = Snapshotter(store.write_log, owned, interval=3600, stop_writes_on_error=False)
    snapshotter.start()
    store.put(("A", "B", 1), 2)
    FailingWrites(owned)
    with pytest.raises(IsADirectoryError):
        snapshotter.save_if_changed()
    assert store.put(("A", "B", 2), 3) is True
    assert "writes are still accepted (GROWTH_STOP_WRITES_ON_SNAPSHOT_ERROR=off)" in caplog.text


def test_the_same_failure_is_logged_once_a_minute_a_new_one_at_once(owned, caplog, monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(journal_module, "ThrottledLog", functools.partial(ThrottledLog, clock=lambda: now[0]))
    store = opened(owned.path)
    snapshotter = Snapshotter(store.write_log, owned, interval=1, stop_writes_on_error=False)
    snapshotter.start()
    failing = FailingWrites(owned)

    def attempt(seconds_later):
        now[0] += seconds_later
        store.put(("A", "B", 1), now[0])
        with pytest.raises(OSError):
            snapshotter.save_if_changed()
        return [r.getMessage() for r in caplog.records if "failed" in r.getMessage()][-1]

    logged = [attempt(1) for _ in range(3)] + [attempt(journal_module.FAILURE_LOG_SECONDS)]
    assert [line.split(" failed ")[1][:12] for line in dict.fromkeys(logged)] == ["(1 in a row)", "(4 in a row)"]
    failing.lift()
    os.mkdir(owned.path)  # another error: the rename fails
    assert f"(5 in a row): [Errno 21] Is a directory: '{temporary_path(owned.path)}' -> '{owned.path}'" in attempt(1)


def test_failed_snapshots_back_off_from_1_s_doubling_to_30_s(owned):
    store = opened(owned.path)
    snapshotter = Snapshotter(store.write_log, owned, interval=1, stop_writes_on_error=True)
    FailingWrites(owned)
    waits = []
    for _ in range(7):
        store.write_log.changes += 1
        with pytest.raises(OSError):
            snapshotter.save_if_changed()
        waits.append(snapshotter._retry_seconds())
    assert waits == [1, 2, 4, 8, 16, 30, 30]
