"""What only the Redis store has: jobs shared by workers, and a Redis that goes away and comes back."""

import logging
import socket
import threading

import gevent
import pytest
import webtest

from growth_gevent.api.app import create_app
from growth_gevent.http.responses import RETRY_AFTER_SECONDS
from growth_gevent.stores.base import BulkQueueFull, StoreFull, StoreUnavailable
from growth_gevent.testing import open_redis_store, wait_for
from tests.helpers.redis_support import (
    HANG_SECONDS,
    KEY,
    TIMEOUT,
    WAIT_SECONDS,
    in_greenlets,
    open_store,
    queue_and_die,
    series_records,
    unavailable,
)

BUSY_SCRIPT = """
local started = redis.call('TIME')
repeat
  local now = redis.call('TIME')
until (now[1] - started[1]) * 1000000 + (now[2] - started[2]) > tonumber(ARGV[1])
"""


@pytest.fixture
def shared(redis_server):
    """Two stores on one Redis: what two worker processes see."""
    redis_server.flush()
    first, second = open_store(redis_server), open_store(redis_server)
    yield first, second
    first.close()
    second.close()


def test_a_job_queued_by_a_worker_that_died_is_applied_by_another(redis_server):
    redis_server.flush()
    queue_and_die(redis_server, series_records("A", 9))
    survivor = open_store(redis_server)
    try:
        assert survivor.bulk_status().jobs_applied == 0
        assert survivor.wait_idle(WAIT_SECONDS)
        assert survivor.size() == 9
        assert survivor.bulk_status().records_applied == 9
    finally:
        survivor.close()


def test_jobs_apply_in_the_order_accepted_whichever_worker_accepted_them(shared):
    first, second = shared
    for value in range(6):
        (first if value % 2 else second).submit_bulk([(KEY, value)] * 5)
    assert second.wait_idle(WAIT_SECONDS)
    assert first.get(KEY) == 5
    assert first.bulk_status() == second.bulk_status()
    assert first.bulk_status().jobs_accepted == 6


def test_one_store_answers_for_what_the_other_wrote(shared):
    first, second = shared
    assert [first.put(KEY, 1), second.put(KEY, 2)] == [True, False]
    assert [second.delete(KEY), first.delete(KEY)] == [True, False]
    assert first.size() == second.size() == 0


@pytest.fixture
def down_client(own_redis, config):
    store = open_store(own_redis)
    yield webtest.TestApp(create_app(store, config)), own_redis
    store.close()


def assert_unavailable(response):
    assert response.status_int == 503
    assert response.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
    assert response.json == {"msg": "the store is unavailable, retry later"}


STORE_REQUESTS = [
    ("GET", "/api/v1/growth/BRZ/NGDP_R/2002", None),
    ("PUT", "/api/v1/growth/BRZ/NGDP_R/2002", b'{"value": 1}'),
    ("DELETE", "/api/v1/growth/BRZ/NGDP_R/2002", None),
    ("GET", "/api/v1/growth/BRZ/NGDP_R", None),
    ("GET", "/api/v1/growth", None),
    ("POST", "/api/v1/growth", b'[{"Country": "A", "Indicator": "B", "Value": 1, "Year": 1}]'),
    ("GET", "/api/v1/growth/size", None),
    ("GET", "/api/v1/growth/post/status", None),
]


def request(client, method, path, body):
    return client.request(path, method=method, body=body, content_type="application/json", expect_errors=True)


def test_a_stopped_redis_is_503_on_every_store_request_and_the_rest_still_answers(down_client):
    client, server = down_client
    assert client.get("/api/v1/growth/size").json == {"size": 0}
    server.stop()
    for method, path, body in STORE_REQUESTS:
        assert_unavailable(request(client, method, path, body))
    assert client.get("/ping").body == b"pong"
    metrics = client.get("/metrics").text
    assert "growth_store_up 0.0" in metrics and "growth_records" not in metrics


@pytest.mark.parametrize("method, path, body", STORE_REQUESTS)
def test_a_hanging_redis_is_503_after_the_timeout_not_a_hang(down_client, method, path, body):
    """Every request that asks Redis, the bulk POST too, which asks for the queue's room while it holds
    the process's one parse slot: once Redis answers again, so does the request, the slot given back."""
    client, server = down_client
    assert client.get("/api/v1/growth/size").status_int == 200
    server.pause()
    with gevent.Timeout(HANG_SECONDS, AssertionError("the request hung with Redis")):
        assert_unavailable(request(client, method, path, body))  # answered while Redis still hangs
    server.resume()
    assert request(client, method, path, body).status_int < 500
    assert client.get("/api/v1/growth/size").status_int == 200


def test_the_service_recovers_when_redis_comes_back(down_client):
    client, server = down_client
    client.put("/api/v1/growth/A/B/1", b'{"value": 1}', content_type="application/json")
    server.stop()
    assert_unavailable(request(client, "POST", "/api/v1/growth", b"[]"))
    server.start()  # same port, empty: a restart without persistence
    assert client.get("/api/v1/growth/size").json == {"size": 0}
    assert client.get("/api/v1/growth/post/status").json["jobs accepted"] == 0  # the refused POST left nothing
    assert client.put("/api/v1/growth/A/B/1", b'{"value": 2}', content_type="application/json").status_int == 201


class ReplyDroppingProxy:
    """A TCP proxy to Redis that, once ``drop_next_reply()`` is called, passes the next command on
    and closes the client's connection instead of passing the reply back: a connection lost mid-request."""

    def __init__(self, upstream_port):
        self._upstream_port = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"redis://127.0.0.1:{self._listener.getsockname()[1]}/0"
        self._drop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def drop_next_reply(self):
        self._drop.set()

    def _accept(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._upstream_port))
            threading.Thread(target=self._pipe, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, True), daemon=True).start()

    def _pipe(self, source, target, replies):
        try:
            while data := source.recv(65536):
                if replies and self._drop.is_set():
                    self._drop.clear()
                    break
                target.sendall(data)
        except OSError:
            pass
        for end in (source, target):
            end.close()

    def close(self):
        self._listener.close()


@pytest.fixture
def lossy(redis_server):
    """A store whose connection to Redis can lose one reply, and a direct client to check Redis."""
    redis_server.flush()
    proxy = ReplyDroppingProxy(redis_server.port)
    store = open_redis_store(proxy.url, pool_size=2, timeout=TIMEOUT, chunk_size=2)
    # Connected: the pipelined connection (records) and a pooled one (bulk loads).
    assert store.size() == 0 and store.needs_initial_data()
    yield store, proxy, redis_server.client()
    store.close()
    proxy.close()


@pytest.mark.parametrize("write", ["put", "delete", "submit_bulk"])
def test_a_write_whose_reply_is_lost_is_503_and_is_not_run_twice(lossy, write):
    store, proxy, direct = lossy
    if write == "delete":
        store.put(KEY, 1)
    proxy.drop_next_reply()
    with pytest.raises(StoreUnavailable):
        if write == "submit_bulk":
            store.submit_bulk([(KEY, 1)])
        else:
            getattr(store, write)(*((KEY, 1) if write == "put" else (KEY,)))
    # It ran once: the record is there (or gone) and a bulk job was queued once, not twice.
    assert store.wait_idle(WAIT_SECONDS)
    assert direct.hexists("growth:s:BRZ/NGDP_R", 2002) == (write != "delete")
    assert int(direct.hget("growth:bulk", "accepted") or 0) == (write == "submit_bulk")
    assert store.size() == (write != "delete")


def test_a_redis_busy_with_a_long_script_is_unavailable_not_an_error(own_redis):
    store = open_store(own_redis)
    with own_redis.client() as direct:
        direct.config_set("busy-reply-threshold", 50)
    busy = threading.Thread(target=lambda: own_redis.client().eval(BUSY_SCRIPT, 0, 1_500_000))
    busy.start()
    try:
        # Past 50 ms of script, Redis answers BUSY to everyone else, well before the client's timeout.
        assert "BUSY" in str(wait_for(lambda: unavailable(store.size), timeout=5))
    finally:
        busy.join()
        store.close()


def test_the_bulk_queue_is_bounded_across_workers_and_frees_room_as_jobs_are_applied(redis_server):
    redis_server.flush()
    queue_and_die(redis_server, series_records("A", 8))
    store = open_store(redis_server, queue_records=10)
    try:
        with pytest.raises(BulkQueueFull) as refused:
            store.submit_bulk(series_records("B", 3))
        assert (refused.value.pending, refused.value.limit) == (8, 10)
        assert store.bulk_status().jobs_accepted == 1  # nothing queued
        with pytest.raises(BulkQueueFull) as refused_before_parsing:
            store.check_bulk_room(3)
        assert (refused_before_parsing.value.pending, refused_before_parsing.value.limit) == (8, 10)
        store.check_bulk_room(2)
        assert store.submit_bulk(series_records("C", 2)) == 2  # up to the bound exactly
        assert store.wait_idle(WAIT_SECONDS)
        assert store.bulk_status().records_waiting == 0
        assert store.submit_bulk(series_records("D", 10)) == 3
        assert store.wait_idle(WAIT_SECONDS)
        assert store.size() == 20
    finally:
        store.close()


def test_initial_data_is_exempt_from_the_queue_bound(redis_server):
    redis_server.flush()
    store = open_store(redis_server, queue_records=10)
    try:
        with pytest.raises(BulkQueueFull):
            store.submit_bulk(series_records("A", 11))
        assert store.submit_bulk(series_records("A", 11), initial=True) == 1
        assert store.wait_idle(WAIT_SECONDS)
        assert store.size() == 11
    finally:
        store.close()


def test_a_redis_out_of_memory_pauses_bulk_loading_without_spending_attempts(own_redis, caplog):
    queue_and_die(own_redis, series_records("A", 4))
    store = open_store(own_redis)
    with own_redis.client() as direct:
        direct.config_set("maxmemory", 1)  # every write refused
        try:
            with caplog.at_level(logging.WARNING, logger="growth_gevent"):
                assert not store.wait_idle(0.5)  # the applier tries every few milliseconds meanwhile
            assert "bulk loading paused" in caplog.text and "chunk failed" not in caplog.text
            direct.config_set("maxmemory", 0)
            assert store.wait_idle(WAIT_SECONDS)
            assert store.size() == 4 and store.bulk_status().jobs_failed == 0
        finally:
            store.close()


@pytest.mark.parametrize("loss", ["FLUSHALL", "restart"])
def test_needs_initial_data_when_redis_lost_its_data(own_redis, loss):
    store = open_store(own_redis)
    try:
        assert store.needs_initial_data()  # a new Redis
        assert store.submit_bulk(series_records("A", 3), initial=True) == 1
        assert not store.needs_initial_data()  # queued
        assert store.wait_idle(WAIT_SECONDS)
        assert not store.needs_initial_data()  # applied
        for year in range(3):
            store.delete(("A", "B", year))
        assert not store.needs_initial_data()  # emptied by clients: the marker stays
        if loss == "FLUSHALL":
            own_redis.flush()
        else:
            own_redis.stop()
            own_redis.start()
        assert store.needs_initial_data()
        assert store.submit_bulk(series_records("A", 3), initial=True) == 1
        assert not store.needs_initial_data()
    finally:
        store.close()


CAP = 10


def test_the_record_cap_holds_across_workers_racing_to_write_new_keys(shared_capped):
    """Two workers, 15 new keys each, all at once: the cap is decided in the script that writes."""
    keys = iter([(f"W{n}", "B", n) for n in range(30)])
    stores = iter(shared_capped * 15)
    outcomes = in_greenlets(30, lambda: next(stores).put(next(keys), 1), errors=(StoreFull,))
    assert outcomes.count(True) == CAP
    refusals = [outcome for outcome in outcomes if isinstance(outcome, StoreFull)]
    assert len(refusals) == 30 - CAP and {(refused.held, refused.limit) for refused in refusals} == {(CAP, CAP)}
    assert shared_capped[0].size() == shared_capped[1].size() == CAP


@pytest.fixture
def shared_capped(redis_server):
    redis_server.flush()
    first, second = open_store(redis_server, max_records=CAP), open_store(redis_server, max_records=CAP)
    yield first, second
    first.close()
    second.close()


def test_a_bulk_job_that_would_pass_the_cap_with_what_other_workers_queued_is_refused(redis_server):
    redis_server.flush()
    queue_and_die(redis_server, series_records("A", 4))  # waiting, queued by a worker that died
    store = open_store(redis_server, max_records=CAP, queue_records=100)
    try:
        store.put(("S", "T", 1), 1)
        store._apply_one_chunk = lambda: False  # the job stays queued
        store.check_bulk_room(6)  # before parsing only the queue is judged
        with pytest.raises(StoreFull) as refused:
            store.submit_bulk(series_records("B", 6))
        assert (refused.value.held, refused.value.limit, refused.value.records) == (5, CAP, 6)
        assert store.bulk_status().jobs_accepted == 1  # nothing queued
        assert store.submit_bulk(series_records("A", 4)) == 2  # the keys the dead worker's job counted
        assert store.submit_bulk(series_records("B", 5)) == 3  # up to the cap exactly
        del store._apply_one_chunk
        assert store.wait_idle(WAIT_SECONDS)
        assert store.size() == CAP
    finally:
        store.close()


def test_past_both_bounds_a_bulk_job_is_refused_by_the_queue_bound_retry_later_first(redis_server):
    redis_server.flush()
    store = open_store(redis_server, max_records=CAP, queue_records=CAP)
    try:
        with pytest.raises(BulkQueueFull):
            store.submit_bulk(series_records("B", CAP + 1))
        with pytest.raises(BulkQueueFull):
            store.check_bulk_room(CAP + 1)
    finally:
        store.close()


def test_initial_data_is_exempt_from_the_cap_and_said_so(redis_server, caplog):
    redis_server.flush()
    store = open_store(redis_server, max_records=CAP)
    try:
        assert store.submit_bulk(series_records("A", CAP + 2), initial=True) == 1
        assert store.wait_idle(WAIT_SECONDS)
        assert store.size() == CAP + 2
        assert "initial data of 12 records is more than the store's maximum of 10" in caplog.text
        with pytest.raises(StoreFull):
            store.put(("C", "D", 1), 1)
    finally:
        store.close()


@pytest.mark.parametrize("min_replicas", [1, 0])
def test_ready_is_503_while_too_few_replicas_are_connected_to_confirm_writes(redis_server, config, min_replicas):
    redis_server.flush()
    store = open_store(redis_server, min_replicas=min_replicas, replica_timeout=0.05)
    try:
        store.ping()  # and the checks every CHECK_SECONDS begin, the first at once
        client = webtest.TestApp(create_app(store, config))
        if not min_replicas:
            assert client.get("/ready").json == {"msg": "ready"}
            return
        put = client.put_json("/api/v1/growth/A/B/1", {"value": 1}, status=503)  # refused: no replica confirms
        assert "replicas" in put.json["msg"]
        response = client.get("/ready", status=503)
        assert response.json == {"msg": "writes are refused: GROWTH_REDIS_MIN_REPLICAS=1, but the Redis primary has "
                                        "0 replicas connected"}
    finally:
        store.close()
