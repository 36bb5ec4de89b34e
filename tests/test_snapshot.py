import json
import os

import pytest

from growth_gevent.snapshot import FORMAT, Snapshotter, SnapshotError, read_snapshot, write_snapshot
from growth_gevent.store import MemoryStore

ITEMS = [(("BRZ", "NGDP_R", 2002), 183.26), (("ABW", "X", -5), 7), (("Z", "Y", 1), 1e300)]


def test_a_snapshot_reads_back_exactly(tmp_path):
    path = tmp_path / "snapshot.json"
    write_snapshot(str(path), ITEMS)
    assert read_snapshot(str(path)) == ITEMS
    assert [type(value) for _, value in read_snapshot(str(path))] == [float, int, float]


def test_an_empty_store_makes_a_valid_snapshot(tmp_path):
    path = tmp_path / "snapshot.json"
    write_snapshot(str(path), [])
    assert read_snapshot(str(path)) == []


def test_the_format_is_the_documented_one(tmp_path):
    path = tmp_path / "snapshot.json"
    write_snapshot(str(path), ITEMS[:1])
    assert json.loads(path.read_text()) == {"format": FORMAT, "version": 1, "count": 1,
                                            "records": [["BRZ", "NGDP_R", 2002, 183.26]]}


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
    (b'{"format": "growth-gevent-snapshot", "version": 2, "count": 0, "records": []}', "version 2"),
    (b'{"format": "growth-gevent-snapshot", "version": 1, "count": 5, "records": []}', "count does not match"),
    (b'{"format": "growth-gevent-snapshot", "version": 1, "count": 1, "records": [["A", "B", "1", 2]]}',
     "record 0 is not"),
    (b'{"format": "growth-gevent-snapshot", "version": 1, "count": 1, "records": [["", "B", 1, 2]]}',
     "record 0 is not"),
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


def test_the_snapshotter_writes_only_when_the_store_changed(tmp_path):
    path = tmp_path / "snapshot.json"
    store = MemoryStore()
    snapshotter = Snapshotter(store, str(path), interval=3600)
    assert snapshotter.save_if_changed() is False
    assert not path.exists()
    store.put(("A", "B", 1), 2)
    assert snapshotter.save_if_changed() is True
    assert snapshotter.save_if_changed() is False
    store.delete(("A", "B", 1))
    store.delete(("A", "B", 1))
    assert snapshotter.save_if_changed() is True
    assert read_snapshot(str(path)) == []


def test_stopping_writes_the_last_changes(tmp_path):
    path = tmp_path / "snapshot.json"
    store = MemoryStore()
    snapshotter = Snapshotter(store, str(path), interval=3600)
    snapshotter.start()
    store.put(("A", "B", 1), 2)
    snapshotter.stop()
    assert read_snapshot(str(path)) == [(("A", "B", 1), 2)]
