"""Descriptions (names and units) in the memory store's journal and snapshot: kept as the records are."""

import pytest

from growth_gevent.core.descriptions import COUNTRY, INDICATOR
from growth_gevent.durability.journaled import Undescribed
from growth_gevent.durability.snapshot import SnapshotError, SnapshotLock, Snapshotter, load_snapshot, write_snapshot
from tests.helpers.recovering import KEY, opened

BRAZIL = {"BRA": {"name": "Brazil"}}
GDP = {"NGDP_R": {"name": "Gross domestic product, constant prices", "units": "National currency",
                  "scale": "Billions"}}


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "growth.snapshot")


def test_descriptions_are_replayed_from_the_journal(path):
    store = opened(path)
    store.describe(COUNTRY, {"BRA": {"name": "Brasil"}, "ARG": {"name": "Argentina"}})
    store.describe(COUNTRY, {"BRA": {"name": "Brazil"}, "ARG": None})
    store.describe(INDICATOR, GDP)
    store.close()  # killed: nothing but the journal
    again = opened(path)
    assert again.descriptions(COUNTRY) == BRAZIL
    assert again.descriptions(INDICATOR) == GDP


def test_descriptions_are_in_the_snapshot_and_the_journal_after_it(path):
    store = opened(path)
    snapshotter = Snapshotter(store.write_log, SnapshotLock(path), interval=3600, stop_writes_on_error=True)
    store.put(KEY, 1)
    store.describe(COUNTRY, BRAZIL)
    assert snapshotter.save_if_changed() is True
    assert load_snapshot(path)[2] == {COUNTRY: BRAZIL, INDICATOR: {}}
    store.describe(INDICATOR, GDP)
    store.close()
    again = opened(path)
    assert (again.descriptions(COUNTRY), again.descriptions(INDICATOR)) == (BRAZIL, GDP)


def test_a_snapshot_without_descriptions_is_as_before(path):
    write_snapshot(path, [(KEY, 1)], 2, {COUNTRY: {}, INDICATOR: {}})
    with open(path, "rb") as snapshot:
        assert b"descriptions" not in snapshot.read()
    assert load_snapshot(path)[:3] == ([(KEY, 1)], 2, {})


@pytest.mark.parametrize("descriptions", [{"place": BRAZIL}, {COUNTRY: {"BRA": {"units": "x"}}},
                                          {COUNTRY: {"BRA": {"name": 1}}}, {COUNTRY: ["BRA"]}])
def test_descriptions_growth_gevent_would_not_write_are_damage(path, descriptions):
    write_snapshot(path, [(KEY, 1)], 2, descriptions)
    with pytest.raises(SnapshotError, match="its descriptions are not what growth-gevent writes"):
        load_snapshot(path)


def test_a_patch_not_kept_is_undone(path):
    store = opened(path)
    store.describe(COUNTRY, BRAZIL)
    store.describe(COUNTRY, {"BRA": {"name": "Brasil"}, "ARG": {"name": "Argentina"}})
    store.write_log._undo("disk full", [Undescribed(COUNTRY, {"BRA": {"name": "Brazil"}, "ARG": {}})])
    assert store.descriptions(COUNTRY) == BRAZIL
