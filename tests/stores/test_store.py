"""The store contract, against every kind of store (the ``store`` fixture), and what only the memory store has."""


import pytest

from growth_gevent.config import DEFAULT_BULK_QUEUE_RECORDS
from growth_gevent.stores.base import BulkQueueFull, StoreFull
from tests.helpers.support import applier_paused, make_store, memory_store

KEY = ("BRZ", "NGDP_R", 2002)
WAIT_SECONDS = 10


def test_put_get_delete_and_size(store):
    assert store.get(KEY) is None
    assert store.put(KEY, 1.0) is True
    assert store.put(KEY, 2.0) is False
    assert store.get(KEY) == 2.0
    assert store.size() == 1
    assert store.delete(KEY) is True
    assert store.delete(KEY) is False
    assert store.size() == 0


def test_zero_is_a_stored_value_not_an_absence(store):
    store.put(KEY, 0)
    assert store.get(KEY) == 0
    assert store.delete(KEY) is True


def test_values_come_back_with_their_type_and_every_digit(store):
    values = [0.1 + 0.2, -0.0, 5e-324, 1.7976931348623157e308, 10 ** 300, -7, 1e16, 100.0]
    for year, value in enumerate(values):
        store.put(("A", "B", year), value)
    for year, value in enumerate(values):
        stored = store.get(("A", "B", year))
        assert (type(stored), repr(stored)) == (type(value), repr(value))


def test_bulk_jobs_apply_in_order_and_report_status(store):
    with applier_paused(store):
        store.submit_bulk([(KEY, 1), (("A", "B", 1), 1), (KEY, 2)])
        store.submit_bulk([(KEY, 3)])
        assert store.bulk_status().state == "in progress"
    assert store.wait_idle(WAIT_SECONDS)  # which wakes the applier
    assert store.get(KEY) == 3
    assert store.size() == 2
    status = store.bulk_status()
    assert (status.state, status.applied, status.total, status.jobs_applied) == ("complete", 1, 1, 2)
    assert status.records_applied == 4


def test_bulk_keeps_any_name_that_a_url_can_carry(store):
    names = ['CÔTE D’IVOIRE', 'QUOTE"BACKSLASH\\', "TAB\tNEWLINE\n", "\U0001F600", "NUL\x00", "[1,2]"]
    store.submit_bulk([((name, name, 1), 1) for name in names])
    assert store.wait_idle(WAIT_SECONDS)
    for name in names:
        assert store.get((name, name, 1)) == 1
        assert store.series(name, name) == [(1, 1)]
    assert store.records() == (len(names), [((name, name, 1), 1) for name in sorted(names)])


def load_four(store):
    for key, value in [(("B", "X", 3), 3), (("B", "X", 1), 1), (("A", "Y", 2), 2), (("B", "W", 5), 5)]:
        store.put(key, value)


def test_series_by_year_within_bounds(store):
    load_four(store)
    assert store.series("B", "X") == [(1, 1), (3, 3)]
    assert store.series("B", "X", first=2) == [(3, 3)]
    assert store.series("B", "X", first=3, last=3) == [(3, 3)]
    assert store.series("B", "X", first=2, last=2) == []
    assert store.series("NOPE", "X") == []


def test_years_are_ordered_as_numbers_of_any_length(store):
    years = [10 ** 30, -(10 ** 30), -10, -9, 0, 9, 10, 2002, 10 ** 30 + 1]
    for year in years:
        store.put(("A", "B", year), year % 7)
    expected = [(year, year % 7) for year in sorted(years)]
    assert store.series("A", "B") == expected
    assert store.records() == (len(years), [(("A", "B", year), value) for year, value in expected])
    assert store.records(first=-10, last=10) == (5, [(("A", "B", year), year % 7) for year in (-10, -9, 0, 9, 10)])
    assert store.records(first=10 ** 30 + 1, last=10 ** 30 + 1)[0] == 1


def test_records_pages_in_key_order_and_counts_all_matches(store):
    load_four(store)
    assert store.records() == (4, [(("A", "Y", 2), 2), (("B", "W", 5), 5), (("B", "X", 1), 1), (("B", "X", 3), 3)])
    assert store.records(offset=1, limit=2) == (4, [(("B", "W", 5), 5), (("B", "X", 1), 1)])
    assert store.records(country="B", first=2) == (2, [(("B", "W", 5), 5), (("B", "X", 3), 3)])
    assert store.records(indicator="X", offset=5) == (2, [])
    assert store.records(first=3, last=3) == (1, [(("B", "X", 3), 3)])


def test_a_page_after_a_key_starts_strictly_after_it_and_counts_all_matches(store):
    load_four(store)
    everything = store.records()[1]
    assert store.records(after=("A", "Y", 2)) == (4, everything[1:])
    assert store.records(after=("B", "X", 1), limit=5) == (4, everything[3:])
    assert store.records(after=("B", "X", 3)) == (4, [])
    assert store.records(after=("B", "W", 5), limit=1) == (4, [(("B", "X", 1), 1)])
    assert store.records(after=("B", "W", 5), offset=1) == (4, [(("B", "X", 3), 3)])


def test_the_key_after_which_a_page_starts_need_not_be_stored(store):
    load_four(store)
    assert store.records(after=("B", "X", 2)) == (4, [(("B", "X", 3), 3)])
    assert store.records(after=("B", "", 10 ** 30)) == (4, [(("B", "W", 5), 5), (("B", "X", 1), 1), (("B", "X", 3), 3)])
    assert store.records(after=("A", "Z", -(10 ** 30))) == (4, store.records()[1][1:])
    assert store.records(after=("", "", 0)) == store.records()
    assert store.records(after=("C", "", 0)) == (4, [])


def test_a_page_after_a_key_keeps_the_filters(store):
    load_four(store)
    assert store.records(country="B", after=("B", "W", 5)) == (3, [(("B", "X", 1), 1), (("B", "X", 3), 3)])
    assert store.records(indicator="X", after=("B", "X", 1)) == (2, [(("B", "X", 3), 3)])
    assert store.records(first=2, after=("A", "Y", 2)) == (3, [(("B", "W", 5), 5), (("B", "X", 3), 3)])
    assert store.records(first=1, last=1, after=("A", "Y", 2)) == (1, [(("B", "X", 1), 1)])


def test_following_pages_by_their_last_key_visits_every_record_once_in_order(store):
    years = [10 ** 30, -(10 ** 30), -10, -9, 0, 9, 10, 2002]
    for name in ("É", "A", "Z", "AB"):
        for year in years:
            store.put((name, name.lower(), year), year % 7)
    expected = store.records(limit=100)[1]
    assert len(expected) == 32
    seen, after = [], None
    while True:
        total, page = store.records(limit=3, after=after)
        assert total == 32
        if not page:
            break
        seen += page
        after = page[-1][0]
    assert seen == expected


def test_deleting_the_last_record_of_a_series_removes_the_series(store):
    load_four(store)
    store.delete(("A", "Y", 2))
    assert store.records(country="A") == (0, [])
    assert store.size() == 3
    assert store.get(("A", "Y", 2)) is None
    store.put(("A", "Y", 2), 4)
    assert store.records(country="A") == (1, [(("A", "Y", 2), 4)])


def test_copy_is_a_consistent_independent_copy():
    store = memory_store()
    load_four(store)
    copy = store.copy()
    assert copy == {"A": {"Y": {2: 2}}, "B": {"X": {1: 1, 3: 3}, "W": {5: 5}}}
    store.put(("B", "X", 1), 10)
    store.delete(("A", "Y", 2))
    assert copy["B"]["X"][1] == 1 and copy["A"] == {"Y": {2: 2}}


def test_initial_data_goes_only_into_a_store_that_is_empty_idle_and_never_had_any(store):
    store.submit_bulk([(KEY, 1)])
    assert store.submit_bulk([(KEY, 2)], initial=True) is None  # a job is pending
    assert store.wait_idle(WAIT_SECONDS)
    assert store.submit_bulk([(KEY, 3)], initial=True) is None  # a record is stored
    store.delete(KEY)
    assert store.submit_bulk([(KEY, 4)], initial=True) == 2  # empty and idle: taken
    assert store.wait_idle(WAIT_SECONDS)
    store.delete(KEY)
    assert store.submit_bulk([(KEY, 5)], initial=True) is None  # initial data was given before
    assert (store.get(KEY), store.bulk_status().jobs_accepted) == (None, 2)


def test_a_store_without_snapshots_reports_none_and_accepts_writes(store):
    assert store.health().snapshots is None
    assert store.health().writes_refused is None


def records(count, value=1):
    return [(("A", "B", year), value) for year in range(count)]


def test_the_bulk_queue_refuses_a_job_past_its_limit_and_queues_nothing():
    store = memory_store(bulk_chunk_records=2, bulk_queue_records=5)
    store.submit_bulk(records(3))  # nothing yields here, so the job stays queued
    with pytest.raises(BulkQueueFull) as refused:
        store.submit_bulk(records(3, value=2))
    assert (refused.value.pending, refused.value.limit) == (3, 5)
    assert str(refused.value) == (
        "bulk queue is full: 3 records waiting to be applied and this load holds up to 3 (limit 5)")
    assert store.bulk_status().jobs_accepted == 1
    assert store.submit_bulk(records(2, value=3)) == 2  # exactly at the limit
    assert store.bulk_status().records_waiting == 5
    assert store.wait_idle(WAIT_SECONDS)
    assert store.bulk_status().records_waiting == 0
    assert [store.get(("A", "B", year)) for year in range(3)] == [3, 3, 1]
    assert store.submit_bulk(records(5)) == 3  # applied records free the queue
    store.close()


def test_check_bulk_room_refuses_as_submit_bulk_would_and_queues_nothing():
    store = memory_store(bulk_chunk_records=2, bulk_queue_records=5)
    store.submit_bulk(records(3))
    store.check_bulk_room(2)  # exactly at the limit
    with pytest.raises(BulkQueueFull) as refused:
        store.check_bulk_room(3)
    assert (refused.value.pending, refused.value.limit) == (3, 5)
    assert store.bulk_status().jobs_accepted == 1
    assert store.wait_idle(WAIT_SECONDS)
    store.check_bulk_room(5)
    store.close()


def test_initial_data_is_not_bounded_by_the_queue():
    store = memory_store(bulk_queue_records=2)
    assert store.submit_bulk(records(10), initial=True) == 1
    assert store.wait_idle(WAIT_SECONDS)
    assert store.size() == 10


def test_the_default_queue_limit_is_the_configured_default():
    store = memory_store()
    with pytest.raises(BulkQueueFull) as refused:
        # One record repeated: the bound is on the count, checked before any record is looked at.
        store.submit_bulk([(("A", "B", 1), 1)] * (DEFAULT_BULK_QUEUE_RECORDS + 1))
    assert refused.value.limit == DEFAULT_BULK_QUEUE_RECORDS


# --- The record cap (max_records) ------------------------------------------------------------------

CAP = 3


@pytest.fixture
def capped(store_kind, request):
    """A store of each kind holding at most CAP records."""
    store = make_store(store_kind, request, max_records=CAP)
    yield store
    store.close()


def fill(store, count=CAP):
    for year in range(count):
        store.put(("A", "B", year), year)


def test_a_new_key_past_the_cap_is_refused_and_nothing_is_stored(capped):
    fill(capped)
    with pytest.raises(StoreFull) as refused:
        capped.put(("C", "D", 1), 1.0)
    assert (refused.value.held, refused.value.limit, refused.value.records) == (CAP, CAP, 1)
    assert str(refused.value) == ("the store is full: it holds at most 3 records, 3 are stored or to be added by "
                                  "loads waiting to be applied, and this write would add 1")
    assert capped.get(("C", "D", 1)) is None
    assert capped.size() == CAP
    assert capped.records(country="C") == (0, [])
    assert capped.records() == (CAP, [(("A", "B", year), year) for year in range(CAP)])


def test_replacing_a_stored_record_works_at_the_cap_and_a_delete_makes_room(capped):
    fill(capped)
    assert capped.put(("A", "B", 0), 9.5) is False
    assert capped.get(("A", "B", 0)) == 9.5
    assert capped.delete(("A", "B", 1)) is True
    assert capped.put(("C", "D", 1), 1.0) is True
    assert capped.size() == CAP


def test_a_bulk_job_is_judged_on_the_new_keys_it_adds_each_counted_once(capped):
    fill(capped, 2)
    with applier_paused(capped):
        for _ in range(5):  # the same load again and again: it adds nothing, however long the queue
            capped.submit_bulk(records(2))
        capped.submit_bulk([(("C", "D", 1), 1), (("C", "D", 1), 2), (("A", "B", 0), 3)])  # one new key, once
        capped.submit_bulk([(("C", "D", 1), 4)])  # counted by the job before it
        with pytest.raises(StoreFull) as refused:
            capped.submit_bulk([(("C", "D", 1), 5), (("C", "D", 2), 5)])
        assert (refused.value.held, refused.value.limit, refused.value.records) == (CAP, CAP, 1)
        with pytest.raises(StoreFull):
            capped.put(("E", "F", 1), 1)  # the room left is the queued job's
        assert capped.put(("C", "D", 1), 9) is True  # a key a queued job adds may be written now
        assert capped.bulk_status().jobs_accepted == 7
        capped.check_bulk_room(CAP)  # before parsing only the queue's room is judged: keys are unknown
    assert capped.wait_idle(WAIT_SECONDS)
    assert (capped.size(), capped.get(("C", "D", 1))) == (CAP, 4)
    with pytest.raises(StoreFull):
        capped.submit_bulk([(("C", "D", 2), 1)])
    assert capped.delete(("A", "B", 0)) is True
    assert capped.submit_bulk([(("C", "D", 2), 1)]) == 8  # the room a delete made
    assert capped.wait_idle(WAIT_SECONDS)
    assert capped.size() == CAP


def test_initial_data_is_not_bounded_by_the_cap(capped):
    assert capped.submit_bulk(records(CAP + 2), initial=True) == 1
    assert capped.wait_idle(WAIT_SECONDS)
    assert capped.size() == CAP + 2
    with pytest.raises(StoreFull):
        capped.put(("C", "D", 1), 1.0)


def test_a_load_leaves_the_memory_store_holding_its_own_names_and_values_not_the_parses():
    # What a parse made lies among the objects its load frees: kept, one would keep their memory (issue 46).
    store = memory_store()
    country, indicator, value = "".join(["B", "R", "Z"]), "".join(["NGDP", "_R"]), float("183.26")
    store.apply_records([((country, indicator, 2002), value), ((country, "".join(["NGDP", "_R"]), 2003), value)])
    (kept_country, indicators), = store.copy().items()
    (kept_indicator, series), = indicators.items()
    assert (kept_country, kept_indicator, series) == ("BRZ", "NGDP_R", {2002: 183.26, 2003: 183.26})
    assert kept_country is not country and kept_indicator is not indicator
    assert store.get(("BRZ", "NGDP_R", 2002)) is not value
    facet_names = [facet[0] for by in ("country", "indicator") for facet in store.facets(by)]
    assert facet_names == ["BRZ", "NGDP_R"] and facet_names[0] is kept_country and facet_names[1] is kept_indicator
