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
