"""Under GROWTH_FSYNC=always a read shows only durable writes (in-process, with fsync held by the test):
a read covering a write in flight waits for that write's fsync, shows the state after the undo when the
fsync fails, and waits for nothing else."""


import gevent
import pytest
import webtest

from growth_gevent.api.app import create_app
from growth_gevent.config import Config
from growth_gevent.core.descriptions import COUNTRY, INDICATOR
from growth_gevent.durability import journal as journal_module
from growth_gevent.stores.base import WritesRefused
from growth_gevent.stores.memory.reads import SERIES_PER_SLICE
from growth_gevent.testing import wait_for
from tests.helpers.durability import GatedFsync
from tests.helpers.recovering import opened

KEY = ("BRZ", "NGDP_R", 2002)
OTHER = ("ARG", "LUR", 1990)


@pytest.fixture
def store(tmp_path):
    store = opened(str(tmp_path / "growth.snapshot"))
    store.put(KEY, 1.0)
    store.put(OTHER, 7.0)
    yield store
    store.close()


class BatchWaits:
    """The greenlets in a journal batch's ``wait``: the writes, and the reads of what a write in flight
    changed, waiting for that batch to be written and fsynced."""

    def __init__(self, monkeypatch):
        self.greenlets = set()
        real = journal_module.Batch.wait

        def wait(batch):
            current = gevent.getcurrent()
            self.greenlets.add(current)
            try:
                real(batch)
            finally:
                self.greenlets.discard(current)

        monkeypatch.setattr(journal_module.Batch, "wait", wait)

    def until_waiting(self, reader):
        """Poll with a deadline until ``reader`` waits for a batch, whose fsync the test holds (so it waits
        until the test allows it); fail at once if it answers first, as a read that does not wait does."""
        def waiting():
            gevent.sleep(0.001)  # the reader runs, up to its answer or its wait
            assert not reader.ready(), f"answered without waiting for the fsync: {reader.value!r}"
            return reader in self.greenlets
        wait_for(waiting, timeout=5)


@pytest.fixture
def fsync(monkeypatch, store):
    gate = GatedFsync(monkeypatch)
    yield gate
    gate.allow(100)


@pytest.fixture
def waits(monkeypatch):
    return BatchWaits(monkeypatch)


def in_flight(store, fsync, value):
    """A PUT of ``value`` to KEY, applied in memory and waiting for its fsync."""
    writer = gevent.spawn(store.put, KEY, value)
    fsync.wait_until_waiting()
    assert store.copy()["BRZ"]["NGDP_R"][2002] == value and not writer.ready()
    return writer


# What each read shows of KEY, whatever its shape.
READS = {
    "record": lambda store: store.get(KEY),
    "series": lambda store: dict(store.series("BRZ", "NGDP_R"))[2002],
    "page": lambda store: dict(store.records()[1])[KEY],
    "size": lambda store: store.size(),
}


@pytest.mark.parametrize("read", ["record", "series", "page"])
def test_a_read_of_a_write_in_flight_waits_for_its_fsync_and_then_shows_it(store, fsync, waits, read):
    writer = in_flight(store, fsync, 2.0)
    reader = gevent.spawn(READS[read], store)
    waits.until_waiting(reader)
    fsync.allow()
    assert reader.get(timeout=5) == 2.0
    assert writer.get(timeout=5) is False


@pytest.mark.parametrize("read", ["record", "series", "page"])
def test_a_read_of_a_write_whose_fsync_fails_shows_the_value_before_it(store, fsync, read):
    writer = in_flight(store, fsync, 2.0)
    reader = gevent.spawn(READS[read], store)
    fsync.fail_next = True
    fsync.allow()
    assert reader.get(timeout=5) == 1.0
    with pytest.raises(WritesRefused):
        writer.get(timeout=5)


def test_size_waits_for_a_record_created_in_flight_and_not_for_an_update(store, fsync, waits):
    updating = in_flight(store, fsync, 2.0)
    assert gevent.with_timeout(1, store.size) == 2  # an update does not change the size
    creating = gevent.spawn(store.put, ("BRZ", "NGDP_R", 2003), 3.0)
    wait_for(lambda: gevent.sleep(0.001) or store.copy()["BRZ"]["NGDP_R"].get(2003) == 3.0)
    reader = gevent.spawn(store.size)
    waits.until_waiting(reader)
    fsync.fail_next = True
    fsync.allow()
    assert reader.get(timeout=5) == 2  # the record created was undone
    for writer in (updating, creating):
        with pytest.raises(WritesRefused):
            writer.get(timeout=5)


@pytest.mark.parametrize("read", [
    lambda store: store.get(OTHER),
    lambda store: store.series("ARG", "LUR"),
    lambda store: store.records(country="ARG"),
    lambda store: store.records(country="BRZ", first=2003),
], ids=["other record", "other series", "other country's page", "page of other years"])
def test_a_read_that_covers_no_write_in_flight_does_not_wait(store, fsync, read):
    in_flight(store, fsync, 2.0)
    gevent.with_timeout(1, read, store)


def test_a_read_waits_for_the_writes_it_shows_not_for_writes_that_arrive_after_it(store, fsync):
    first = in_flight(store, fsync, 2.0)  # its batch in fsync
    reader = gevent.spawn(store.get, KEY)
    gevent.sleep(0)
    second = gevent.spawn(store.put, KEY, 3.0)  # the next batch, pending behind the first
    wait_for(lambda: gevent.sleep(0.001) or store.copy()["BRZ"]["NGDP_R"][2002] == 3.0)
    fsync.allow()  # the first batch's fsync only
    assert reader.get(timeout=5) == 2.0
    assert not second.ready()
    fsync.allow()
    assert second.get(timeout=5) is False and first.get() is False


def test_reads_under_everysec_do_not_wait_they_may_show_what_a_power_cut_erases(tmp_path, monkeypatch):
    store = opened(str(tmp_path / "growth.snapshot"), fsync="everysec")
    fsync = GatedFsync(monkeypatch)
    monkeypatch.setattr(journal_module, "EVERYSEC_SECONDS", 0.001)
    # Its fsync held: after the write, or in the write's batch when the write came 1 ms after the last
    # fsync (a busy machine), which keeps the put from returning.
    first = gevent.spawn(store.put, KEY, 1.0)
    fsync.wait_until_waiting()
    writer = gevent.spawn(store.put, KEY, 2.0)  # waits behind that fsync to be written at all
    wait_for(lambda: gevent.sleep(0.001) or store.copy()["BRZ"]["NGDP_R"][2002] == 2.0)
    assert gevent.with_timeout(1, store.get, KEY) == 2.0 and not writer.ready()
    fsync.allow(100)
    first.get(timeout=5)
    writer.get(timeout=5)
    store.close()


def test_the_api_answers_the_state_after_the_undo(store, fsync):
    client = webtest.TestApp(create_app(store, Config()))
    in_flight(store, fsync, 2.0)
    reader = gevent.spawn(client.get, "/api/v1/growth/brz/ngdp_r/2002")
    fsync.fail_next = True
    fsync.allow()
    assert reader.get(timeout=5).json["Value"] == 1.0


# The export and the facets, as every read.
NEW_YEAR = 1990  # a record of KEY's series that the write in flight creates


def exported(store, **filters):
    return [record for batch in store.export(**filters) for record in batch]


def creating(store, fsync):
    writer = gevent.spawn(store.put, KEY[:2] + (NEW_YEAR,), 5.0)
    fsync.wait_until_waiting()
    return writer


EXPORTS = {
    "export": lambda store: dict(exported(store))[KEY],
    "export of the series": lambda store: dict(exported(store, country="BRZ", indicator="NGDP_R"))[KEY],
}


@pytest.mark.parametrize("read", list(EXPORTS))
def test_an_export_covering_a_write_in_flight_waits_for_its_fsync_and_shows_it(store, fsync, waits, read):
    in_flight(store, fsync, 2.0)
    reader = gevent.spawn(EXPORTS[read], store)
    waits.until_waiting(reader)
    fsync.allow()
    assert reader.get(timeout=5) == 2.0


def test_an_export_shows_the_value_before_a_write_whose_fsync_fails(store, fsync):
    writer = in_flight(store, fsync, 2.0)
    reader = gevent.spawn(EXPORTS["export"], store)
    fsync.fail_next = True
    fsync.allow()
    assert reader.get(timeout=5) == 1.0
    with pytest.raises(WritesRefused):
        writer.get(timeout=5)


@pytest.mark.parametrize("read", [
    lambda store: exported(store, country="ARG"),
    lambda store: exported(store, first=2003),
    lambda store: store.facets(COUNTRY),  # a value replaced changes no count, no year range
    lambda store: store.facets(INDICATOR, country="ARG"),
], ids=["export of another country", "export of other years", "facets, of an update", "facets of another country"])
def test_an_export_or_facets_that_cover_no_write_in_flight_do_not_wait(store, fsync, read):
    in_flight(store, fsync, 2.0)
    gevent.with_timeout(1, read, store)


@pytest.mark.parametrize("by", [COUNTRY, INDICATOR])
def test_facets_wait_for_a_record_created_in_flight_and_show_the_undo_when_it_fails(store, fsync, waits, by):
    writer = creating(store, fsync)
    reader = gevent.spawn(store.facets, by)
    waits.until_waiting(reader)
    fsync.fail_next = True
    fsync.allow()
    assert [facet[1:] for facet in reader.get(timeout=5)] == [(1, 1990, 1990), (1, 2002, 2002)]
    with pytest.raises(WritesRefused):
        writer.get(timeout=5)


def test_a_list_query_that_yields_waits_for_a_write_made_meanwhile(store, fsync, waits):
    # More series than a list query reads between two yields (not logged: the fsyncs are held), and a write
    # that comes in at its first yield, into a series that it reads after it.
    store.apply_records([((f"C{n:05}", "I", 2000), 1.0) for n in range(2 * SERIES_PER_SLICE)])
    reader = gevent.spawn(store.records, first=2000, last=2000, limit=1)
    writer = gevent.spawn(store.put, (f"C{2 * SERIES_PER_SLICE - 1:05}", "J", 2000), 2.0)
    waits.until_waiting(reader)
    fsync.allow()
    assert reader.get(timeout=5)[0] == 2 * SERIES_PER_SLICE + 1
    assert writer.get(timeout=5) is True
