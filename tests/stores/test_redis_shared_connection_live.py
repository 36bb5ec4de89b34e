"""What tests/stores/test_redis_shared_connection.py tests, where it takes a process (redis-server)."""

from growth_gevent.testing import open_redis_store
from tests.helpers.redis_support import KEY, TIMEOUT, in_greenlets, open_store


def test_concurrent_requests_share_round_trips_to_redis(own_redis):
    store = open_store(own_redis)
    try:
        store.size()  # connected
        with own_redis.client() as direct:
            direct.config_resetstat()
            assert in_greenlets(50, lambda: store.put(KEY, 1)).count(True) == 1
            stats = direct.info("stats")
        # 50 scripts, and the reads of the direct client's two commands: Redis read them in a few reads.
        assert stats["total_reads_processed"] < 10
        assert store.get(KEY) == 1 and store.size() == 1
    finally:
        store.close()


def test_requests_do_not_wait_for_the_pool_that_bulk_loads_use(redis_server):
    """The bulk status and the queue's room are asked like record commands, first come first served on
    the pipeline, not after whatever holds the pool's connections (a long enqueue, the applier)."""
    redis_server.flush()
    store = open_redis_store(redis_server.url, pool_size=1, timeout=TIMEOUT)
    pool = store._redis.connection_pool
    held = pool.get_connection()
    try:  # waiting for the pool, each would raise StoreUnavailable after TIMEOUT
        assert store.bulk_status().jobs_accepted == 0
        store.check_bulk_room(1)
        assert store.get(KEY) is None and store.size() == 0
    finally:
        pool.release(held)
        store.close()


def test_a_connection_that_redis_closed_while_idle_is_replaced_before_a_write_is_sent(fresh, redis_server):
    assert fresh.put(KEY, 1) is True
    with redis_server.client() as direct:
        assert direct.client_kill_filter(_type="normal", skip_me=True) >= 1
    assert fresh.put(KEY, 2) is False  # sent on a new connection, not lost on the closed one
    assert fresh.get(KEY) == 2
