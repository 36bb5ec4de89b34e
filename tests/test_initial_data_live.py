"""What tests/test_initial_data.py tests, where it takes a process: a redis-server that loses its data."""

from growth_gevent.initial_data import PreloadWatch
from growth_gevent.testing import open_redis_store
from tests.helpers.support import SAMPLE


def test_the_preload_watch_loads_a_store_that_lost_its_data_once_and_one_emptied_by_clients_never(redis_server):
    redis_server.flush()
    stores = [open_redis_store(redis_server.url, pool_size=2) for _ in range(2)]
    watches = [PreloadWatch(store, str(SAMPLE)) for store in stores]
    try:
        watches[0].check()
        assert stores[0].size() == 9
        for key, _ in stores[0].records()[1]:
            stores[0].delete(key)
        for watch in watches:
            watch.check()
        assert (stores[0].size(), stores[0].bulk_status().jobs_accepted) == (0, 1)
        redis_server.flush()  # as a Redis restarted without persistence
        for watch in watches:
            watch.check()
        assert stores[1].wait_idle(10)
        assert (stores[1].size(), stores[1].bulk_status().jobs_accepted) == (9, 1)
    finally:
        for store in stores:
            store.close()
