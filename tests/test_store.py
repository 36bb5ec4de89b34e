from growth_gevent.store import MemoryStore

KEY = ("BRZ", "NGDP_R", 2002)


def test_put_get_delete_and_size():
    store = MemoryStore()
    assert store.get(KEY) is None
    assert store.put(KEY, 1.0) is True
    assert store.put(KEY, 2.0) is False
    assert store.get(KEY) == 2.0
    assert store.size() == 1
    assert store.delete(KEY) is True
    assert store.delete(KEY) is False
    assert store.size() == 0


def test_zero_is_a_stored_value_not_an_absence():
    store = MemoryStore()
    store.put(KEY, 0)
    assert store.get(KEY) == 0
    assert store.delete(KEY) is True


def test_bulk_jobs_apply_in_order_and_report_status():
    store = MemoryStore(chunk_size=2)
    store.submit_bulk([(KEY, 1), (("A", "B", 1), 1), (KEY, 2)])
    store.submit_bulk([(KEY, 3)])
    assert store.bulk_status().state == "in progress"
    assert store.wait_idle(5)
    assert store.get(KEY) == 3
    assert store.size() == 2
    status = store.bulk_status()
    assert (status.state, status.applied, status.total, status.jobs_applied) == ("complete", 1, 1, 2)
    store.close()


def loaded_store():
    store = MemoryStore()
    for key, value in [(("B", "X", 3), 3), (("B", "X", 1), 1), (("A", "Y", 2), 2), (("B", "W", 5), 5)]:
        store.put(key, value)
    return store


def test_series_by_year_within_bounds():
    store = loaded_store()
    assert store.series("B", "X") == [(1, 1), (3, 3)]
    assert store.series("B", "X", first=2) == [(3, 3)]
    assert store.series("B", "X", first=3, last=3) == [(3, 3)]
    assert store.series("B", "X", first=2, last=2) == []
    assert store.series("NOPE", "X") == []


def test_records_pages_in_key_order_and_counts_all_matches():
    store = loaded_store()
    assert store.records() == (4, [(("A", "Y", 2), 2), (("B", "W", 5), 5), (("B", "X", 1), 1), (("B", "X", 3), 3)])
    assert store.records(offset=1, limit=2) == (4, [(("B", "W", 5), 5), (("B", "X", 1), 1)])
    assert store.records(country="B", first=2) == (2, [(("B", "W", 5), 5), (("B", "X", 3), 3)])
    assert store.records(indicator="X", offset=5) == (2, [])


def test_deleting_the_last_record_of_a_series_removes_the_series():
    store = loaded_store()
    store.delete(("A", "Y", 2))
    assert store.records(country="A") == (0, [])
    assert store.size() == 3
    assert store.get(("A", "Y", 2)) is None


def test_copy_is_a_consistent_independent_copy():
    store = loaded_store()
    copy = store.copy()
    assert copy == {"A": {"Y": {2: 2}}, "B": {"X": {1: 1, 3: 3}, "W": {5: 5}}}
    store.put(("B", "X", 1), 10)
    store.delete(("A", "Y", 2))
    assert copy["B"]["X"][1] == 1 and copy["A"] == {"Y": {2: 2}}
