"""The write gate that the journal, the memory store's durability partner, holds: after a failed snapshot
(with ``refuse_writes``) the store refuses writes, naming the cause, until one succeeds; reads go on."""

import re

import pytest

from growth_gevent.durability.journal import Journal
from growth_gevent.stores.base import SnapshotStatus, WritesRefused
from tests.helpers.recovering import opened
from tests.helpers.support import WAIT_SECONDS

KEY = ("A", "B", 1)
REASON = "[Errno 28] No space left on device"
REFUSAL = f"writes are refused until a snapshot succeeds: the last snapshot failed: {REASON}"


@pytest.fixture
def snapshotted(tmp_path):
    store = opened(str(tmp_path / "growth.snapshot"))
    store.put(KEY, 1)
    store.write_log.snapshots_started(None)
    yield store
    store.close()


def test_status_is_reported_once_snapshots_started(snapshotted):
    partner = snapshotted.write_log
    assert snapshotted.health().snapshots == SnapshotStatus(None, None)
    partner.snapshot_written(1700000000.5)
    assert snapshotted.health().snapshots == SnapshotStatus(1700000000.5, None)
    partner.snapshot_failed(REASON, refuse_writes=False)
    assert snapshotted.health().snapshots == SnapshotStatus(1700000000.5, REASON)


@pytest.mark.parametrize("write", [
    lambda store: store.put(KEY, 2),
    lambda store: store.put(("NEW", "X", 1), 2),
    lambda store: store.delete(KEY),
    lambda store: store.submit_bulk([(KEY, 2)]),
    lambda store: store.check_bulk_room(1),
])
def test_after_a_failed_snapshot_writes_are_refused_naming_the_cause_until_one_succeeds(snapshotted, write):
    partner = snapshotted.write_log
    partner.snapshot_failed(REASON, refuse_writes=True)
    with pytest.raises(WritesRefused, match=r"^" + re.escape(REFUSAL) + "$"):
        write(snapshotted)
    assert snapshotted.health().writes_refused == REFUSAL
    assert (snapshotted.get(KEY), snapshotted.size(), snapshotted.bulk_status().jobs_accepted) == (1, 1, 0)
    partner.snapshot_failed("again", refuse_writes=False)  # only a success lifts the refusal
    assert snapshotted.health().writes_refused is not None
    partner.snapshot_written(1700000001.0)
    assert snapshotted.health().writes_refused is None
    write(snapshotted)  # accepted again


def test_a_failure_without_refuse_writes_lets_writes_go_on(snapshotted):
    snapshotted.write_log.snapshot_failed(REASON, refuse_writes=False)
    assert snapshotted.put(KEY, 3) is False
    assert snapshotted.health().writes_refused is None


def test_initial_data_is_loaded_even_while_writes_are_refused(tmp_path):
    store = opened(str(tmp_path / "growth.snapshot"))
    try:
        store.write_log.snapshots_started(None)
        store.write_log.snapshot_failed(REASON, refuse_writes=True)
        assert store.submit_bulk([(KEY, 1)], initial=True) == 1
        assert store.wait_idle(WAIT_SECONDS)
        assert store.get(KEY) == 1
    finally:
        store.close()



def test_health_reads_the_journals_size_on_disk_only_when_asked(tmp_path, monkeypatch):
    # /ready and the status route read health() on every request; only /metrics shows the size.
    store = opened(str(tmp_path / "growth.snapshot"))
    listings = []
    monkeypatch.setattr(Journal, "size", lambda journal: listings.append(journal) or 0)
    try:
        health = store.health()
        assert listings == []
        assert health.journal is not None and health.journal.size_bytes() == 0 and len(listings) == 1
    finally:
        store.close()
