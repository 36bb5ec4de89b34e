"""The store contract of the export and the facets, against both stores (the ``store`` fixture; on Redis
through tests/stores/test_store_export_live.py)."""

import random

import gevent
import pytest

from growth_gevent.stores.base import EXPORT_BATCH_RECORDS
from growth_gevent.stores.memory.reads import SERIES_PER_SLICE
from tests.helpers.store_export import churn, exported, facets_of_every_kind, loaded
from tests.helpers.support import applier_paused

WAIT_SECONDS = 10
RECORDS = [(("B", "X", 3), 3), (("A", "Y", 2), 2), (("B", "W", 5), 5), (("B", "X", 1), 1), (("B", "X", -7), 9),
           (("C", "Y", 2000), 1.5)]


class TestExport:
    def test_every_record_in_the_order_of_the_pages(self, store):
        loaded(store, RECORDS)
        assert exported(store) == store.records(limit=100)[1]
        assert [key for key, _ in exported(store)] == sorted(key for key, _ in RECORDS)

    @pytest.mark.parametrize("filters", [
        {"country": "B"}, {"indicator": "Y"}, {"first": 2}, {"last": 2}, {"first": 1, "last": 3},
        {"first": 3, "last": 3}, {"country": "B", "indicator": "X", "first": 0}, {"country": "Z"},
        {"indicator": "Z"}, {"first": 10 ** 9}])
    def test_the_filters_of_the_pages(self, store, filters):
        loaded(store, RECORDS)
        assert exported(store, **filters) == store.records(**filters, limit=100)[1]

    def test_an_empty_store_exports_nothing(self, store):
        assert exported(store) == []

    def test_batches_are_bounded_and_hold_every_record_once_across_series_of_any_length(self, store):
        # One series longer than a batch, then many short ones, then one that ends a batch exactly.
        long = [(("A", "LONG", year), year) for year in range(EXPORT_BATCH_RECORDS + 17)]
        short = [((f"B{n:03}", "S", year), n) for n in range(300) for year in range(3)]
        tail = [(("C", "T", year), year) for year in range(EXPORT_BATCH_RECORDS * 2 - len(long) - len(short))]
        records = long + short + tail
        loaded(store, records)
        batches = list(store.export())
        assert all(0 < len(batch) <= EXPORT_BATCH_RECORDS for batch in batches)
        assert [record for batch in batches for record in batch] == sorted(records)

    def test_a_batch_shows_writes_made_before_it_is_read(self, store):
        loaded(store, [(("A", "X", year), year) for year in range(EXPORT_BATCH_RECORDS + 1)])
        batches = store.export()
        first = next(batches)
        store.put(("A", "X", EXPORT_BATCH_RECORDS + 5), 1)  # after the first batch: in a later one
        store.put(("Z", "Z", 1), 1)
        store.delete(("A", "X", EXPORT_BATCH_RECORDS))
        rest = [record for batch in batches for record in batch]
        assert len(first) == EXPORT_BATCH_RECORDS
        assert rest == [(("A", "X", EXPORT_BATCH_RECORDS + 5), 1), (("Z", "Z", 1), 1)]


class TestFacets:
    def test_each_name_with_its_records_and_year_range_in_name_order(self, store):
        loaded(store, RECORDS)
        assert store.facets("country") == [("A", 1, 2, 2), ("B", 4, -7, 5), ("C", 1, 2000, 2000)]
        assert store.facets("indicator") == [("W", 1, 5, 5), ("X", 3, -7, 3), ("Y", 2, 2, 2000)]

    def test_each_filtered_by_the_other(self, store):
        loaded(store, RECORDS)
        assert store.facets("country", indicator="Y") == [("A", 1, 2, 2), ("C", 1, 2000, 2000)]
        assert store.facets("indicator", country="B") == [("W", 1, 5, 5), ("X", 3, -7, 3)]
        assert store.facets("indicator", country="Z") == []
        assert store.facets("country", indicator="Z") == []

    def test_follow_every_write(self, store):
        loaded(store, RECORDS)
        assert store.facets("country", indicator="X") == [("B", 3, -7, 3)]  # the ranges are now known
        store.put(("B", "X", 40), 1)
        assert store.facets("country", indicator="X") == [("B", 4, -7, 40)]
        store.put(("B", "X", 40), 2)  # a value replaced
        store.delete(("B", "X", -7))
        assert store.facets("country", indicator="X") == [("B", 3, 1, 40)]
        loaded(store, [(("B", "X", -100), 1), (("D", "X", 1), 1)])
        assert store.facets("country", indicator="X") == [("B", 4, -100, 40), ("D", 1, 1, 1)]
        for year in (-100, 1, 3, 40):
            store.delete(("B", "X", year))
        assert store.facets("country", indicator="X") == [("D", 1, 1, 1)]
        assert store.facets("indicator", country="B") == [("W", 1, 5, 5)]

    def test_records_of_a_job_not_yet_applied_are_not_counted(self, store):
        with applier_paused(store):
            store.submit_bulk(RECORDS)
            assert store.facets("country") == []
        assert store.wait_idle(WAIT_SECONDS)
        assert [name for name, *_ in store.facets("country")] == ["A", "B", "C"]

    def test_names_in_code_point_order_whatever_their_script(self, store):
        names = ["É", "Z", "A", "\U0001F600", "a"]
        loaded(store, [((name, "I", 1), 1) for name in names])
        assert [name for name, *_ in store.facets("country")] == sorted(names)

    def test_stay_those_of_the_records_through_puts_deletes_and_bulk_loads(self, store):
        rng = random.Random(34)
        keys = [(country, indicator, year) for country in "ABCD" for indicator in "WXYZ" for year in range(-3, 4)]
        for step in range(120):
            churn([store], keys, rng, 1)
            assert facets_of_every_kind(store) == facets_of_every_kind(store, exported(store)), step


@pytest.mark.parametrize("scan", [
    lambda store: store.facets("country"),
    lambda store: store.facets("country", indicator="I"),
    lambda store: store.records(first=1990, last=2010, limit=1),
], ids=["facet", "facet filtered", "list of a year range"])
def test_another_greenlet_runs_during_a_long_scan(store, scan):
    # More series than a scan examines between two yields; on Redis every script is a round trip.
    loaded(store, [((f"C{n:05}", "I", 2000), n) for n in range(2 * SERIES_PER_SLICE + 1)])
    ran = []
    gevent.spawn(ran.append, "the other greenlet")
    scan(store)
    assert ran == ["the other greenlet"]
