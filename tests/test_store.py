"""The store contract, against both stores (the ``store`` fixture), and what only the memory store has."""

from growth_gevent.store import MemoryStore

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
    store.submit_bulk([(KEY, 1), (("A", "B", 1), 1), (KEY, 2)])
    store.submit_bulk([(KEY, 3)])
    assert store.bulk_status().state == "in progress"
    assert store.wait_idle(WAIT_SECONDS)
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


def test_deleting_the_last_record_of_a_series_removes_the_series(store):
    load_four(store)
    store.delete(("A", "Y", 2))
    assert store.records(country="A") == (0, [])
    assert store.size() == 3
    assert store.get(("A", "Y", 2)) is None
    store.put(("A", "Y", 2), 4)
    assert store.records(country="A") == (1, [(("A", "Y", 2), 4)])


def test_copy_is_a_consistent_independent_copy():
    store = MemoryStore()
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
