"""What only the Redis store has: jobs shared by workers, and a Redis that goes away and comes back."""

import json
import logging
import socket
import subprocess
import sys
import threading
import time

import gevent
import pytest
import webtest

from growth_gevent import cli
from growth_gevent.app import create_app
from growth_gevent.responses import RETRY_AFTER_SECONDS
from growth_gevent.config import Config
from growth_gevent.stores import redis as redis_store
from growth_gevent.stores.base import COMPLETE, BulkQueueFull, StoreUnavailable
from growth_gevent.stores.redis import (CHUNK_ATTEMPTS, FAILURE_LOG_LINES, INVALIDATIONS, MAX_GROUP_FIELDS,
                                        RedisStore)
from support import ROOT, memory_store
from live import wait_for
from redis_server import RedisServer

KEY = ("BRZ", "NGDP_R", 2002)
TIMEOUT = 0.5
WAIT_SECONDS = 10


def open_store(server, **options):
    return RedisStore(server.url, pool_size=4, timeout=TIMEOUT, chunk_size=2, **options)


def series_records(country, years):
    return [((country, "B", year), year) for year in range(years)]


# A worker process that queues one job and exits before its background greenlet runs.
QUEUE_AND_EXIT = """
import sys, ujson
from growth_gevent.stores.redis import RedisStore
store = RedisStore(sys.argv[1], pool_size=1, timeout=2, chunk_size=2)
print(store.submit_bulk([(tuple(key), value) for key, value in ujson.loads(sys.argv[2])]))
"""


def queue_and_die(server, records):
    """Queue ``records`` as one job from a worker that died before applying any of it; its number."""
    queued = subprocess.run([sys.executable, "-c", QUEUE_AND_EXIT, server.url, json.dumps(records)],
                            check=True, capture_output=True, text=True, cwd=ROOT)
    return int(queued.stdout)


@pytest.fixture
def fresh(redis_server):
    """A store on the session's Redis, flushed."""
    redis_server.flush()
    store = open_store(redis_server)
    yield store
    store.close()


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
def own_redis():
    server = RedisServer().start()
    yield server
    server.stop()


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
    started = time.monotonic()
    assert_unavailable(request(client, method, path, body))
    assert time.monotonic() - started < TIMEOUT * 4
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


def test_store_calls_raise_store_unavailable_when_nothing_listens():
    server = RedisServer()  # a free port, never started
    store = open_store(server)
    try:
        with pytest.raises(StoreUnavailable):
            store.get(KEY)
        assert store.wait_idle(0.1) is False
    finally:
        store.close()


@pytest.fixture
def self_signed_redis(tmp_path):
    """A TLS-only Redis with a self-signed certificate, as Heroku's Redis add-on serves."""
    certificate, key = str(tmp_path / "certificate.pem"), str(tmp_path / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-keyout", key, "-out", certificate], check=True, capture_output=True)
    server = RedisServer(tls=(certificate, key)).start()
    yield server
    server.stop()


@pytest.mark.parametrize("verify_tls, works", [(True, False), (False, True)])
def test_a_self_signed_certificate_is_refused_unless_verification_is_off(self_signed_redis, verify_tls, works):
    store = RedisStore(self_signed_redis.url, pool_size=2, timeout=TIMEOUT, verify_tls=verify_tls)
    try:
        if works:
            assert store.put(KEY, 1) is True and store.get(KEY) == 1
            with self_signed_redis.client() as direct:
                wait_for(lambda: served_from_cache(store, KEY, direct))  # its own connection is TLS too
        else:
            with pytest.raises(StoreUnavailable, match="certificate verify failed"):
                store.get(KEY)
    finally:
        store.close()


def test_a_chunk_longer_than_one_hset_takes_is_split_into_several(redis_server):
    redis_server.flush()
    years = MAX_GROUP_FIELDS  # records of one series: twice the fields one HSET is given
    store = RedisStore(redis_server.url, pool_size=2, timeout=TIMEOUT, chunk_size=years * 2)
    try:
        store.submit_bulk([(("A", "B", year), year / 2) for year in range(years)])
        assert store.wait_idle(WAIT_SECONDS)
        assert store.size() == years
        assert store.series("A", "B")[-1] == (years - 1, (years - 1) / 2)
    finally:
        store.close()


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
    store = RedisStore(proxy.url, pool_size=2, timeout=TIMEOUT, chunk_size=2)
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


BUSY_SCRIPT = """
local started = redis.call('TIME')
repeat
  local now = redis.call('TIME')
until (now[1] - started[1]) * 1000000 + (now[2] - started[2]) > tonumber(ARGV[1])
"""


def unavailable(call):
    """The StoreUnavailable that ``call()`` raises, or None when it succeeds."""
    try:
        call()
    except StoreUnavailable as error:
        return error
    return None


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


def test_no_request_walks_the_keyspace(redis_server, config, sample_records):
    """Every route, with every list filter: Redis counts each command, those run by scripts too."""
    redis_server.flush()
    store = RedisStore(redis_server.url, pool_size=2, timeout=2)
    client = webtest.TestApp(create_app(store, config))
    with redis_server.client() as direct:
        direct.config_resetstat()
        client.post_json("/api/v1/growth", sample_records, status=202)
        assert store.wait_idle(WAIT_SECONDS)
        for path in ["/api/v1/growth/BRZ/NGDP_R/2002", "/api/v1/growth/BRZ/NGDP_R?from=2000&to=2005",
                     "/api/v1/growth", "/api/v1/growth?year=2002", "/api/v1/growth?from=2000&to=2003&offset=2",
                     "/api/v1/growth?country=BRZ&indicator=NGDP_R", "/api/v1/growth?indicator=NGDP_R",
                     "/api/v1/growth/size", "/api/v1/growth/post/status", "/metrics"]:
            client.get(path)
        client.put_json("/api/v1/growth/A/B/1", {"value": 1}, status=201)
        client.delete("/api/v1/growth/A/B/1", status=204)
        used = {name.removeprefix("cmdstat_") for name in direct.info("commandstats")}
    store.close()
    assert {"hget", "hset", "hdel"} <= used
    assert not used & {"keys", "scan", "hscan", "zscan", "sscan", "randomkey"}


@pytest.mark.live
def test_a_redis_at_its_client_limit_is_unavailable_not_an_error():
    server = RedisServer(settings=["--maxclients", "1"]).start()
    store = open_store(server)
    try:
        with server.client() as only_client:
            only_client.ping()
            assert "max number of clients" in str(unavailable(store.size))
        assert store.size() == 0  # the slot is free again
    finally:
        store.close()
        server.stop()


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


def break_job(direct, breakage):
    """Make the chunks of job 1 (series A/B) fail to apply: a chunk that is not JSON, or the series'
    key holding another type."""
    if breakage == "malformed chunk":
        direct.lset("growth:job:1", 0, "[not JSON")
    else:
        direct.set("growth:s:A/B", "a string where a hash should be")


@pytest.mark.parametrize("breakage, error", [("malformed chunk", "Expected value"), ("key of another type", "WRONGTYPE")])
def test_a_chunk_that_keeps_failing_moves_its_job_to_the_dead_letters_and_later_jobs_proceed(
        redis_server, caplog, breakage, error):
    redis_server.flush()
    queue_and_die(redis_server, series_records("A", 4))  # job 1, two chunks
    queue_and_die(redis_server, series_records("C", 4))  # job 2, waiting behind it
    direct = redis_server.client()
    break_job(direct, breakage)
    chunks = direct.lrange("growth:job:1", 0, -1)
    store = open_store(redis_server, queue_records=8)
    try:
        with caplog.at_level(logging.WARNING, logger="growth_gevent"):
            assert store.wait_idle(WAIT_SECONDS)
        status = store.bulk_status()
        assert (status.state, status.jobs_accepted, status.jobs_applied, status.jobs_failed) == (COMPLETE, 2, 1, 1)
        assert store.size() == 4 and store.get(("C", "B", 3)) == 3
        assert direct.lrange("growth:dead", 0, -1) == [b"1"]
        assert direct.lrange("growth:dead:1", 0, -1) == chunks  # kept whole for inspection, the failing one first
        assert error in direct.hget("growth:dead:errors", "1").decode()
        assert not direct.exists("growth:job:1")
        assert store.submit_bulk(series_records("D", 8)) == 3  # the dead job's records no longer count
    finally:
        store.close()
        direct.close()
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == CHUNK_ATTEMPTS
    for attempt, line in enumerate(lines[:-1], 1):
        assert line.startswith(f"bulk job 1: a chunk failed (attempt {attempt} of {CHUNK_ATTEMPTS})") and error in line
    assert lines[-1].startswith(f"bulk job 1 given up after {CHUNK_ATTEMPTS} failed attempts") and error in lines[-1]
    assert "growth:dead:1" in lines[-1]


def test_failing_chunks_are_logged_up_to_the_limit_not_more(redis_server, caplog):
    redis_server.flush()
    jobs = FAILURE_LOG_LINES // CHUNK_ATTEMPTS + 1
    for country in range(jobs):
        queue_and_die(redis_server, series_records(f"A{country}", 1))
    with redis_server.client() as direct:
        for job in range(1, jobs + 1):
            direct.lset(f"growth:job:{job}", 0, "[not JSON")
    store = open_store(redis_server)
    try:
        with caplog.at_level(logging.WARNING, logger="growth_gevent"):
            assert store.wait_idle(WAIT_SECONDS)
        assert store.bulk_status().jobs_failed == jobs
    finally:
        store.close()
    assert len(caplog.records) == FAILURE_LOG_LINES < jobs * CHUNK_ATTEMPTS


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


def test_a_database_the_server_does_not_have_is_a_clear_value_error(own_redis):
    store = RedisStore(own_redis.url.removesuffix("/0") + "/99", pool_size=2, timeout=TIMEOUT)
    try:
        with pytest.raises(ValueError, match=r"^the Redis URL selects database 99, but the server has 16 \(0 to 15\)$"):
            store.ping()
    finally:
        store.close()


def hget_calls(direct):
    return direct.info("commandstats").get("cmdstat_hget", {}).get("calls", 0)


def served_from_cache(store, key, direct):
    """Whether a read of ``key`` is answered without asking Redis, after yielding to the store's greenlets."""
    gevent.sleep(0.01)
    before = hget_calls(direct)
    store.get(key)
    return hget_calls(direct) == before


def cache_record(store, direct):
    """KEY holds 1, read once and then served from the store's cache."""
    store.put(KEY, 1)
    assert store.get(KEY) == 1
    wait_for(lambda: served_from_cache(store, KEY, direct))


@pytest.fixture
def cached(redis_server):
    """A store whose cache only invalidation can refresh (a bound far beyond the tests' deadlines),
    another store on the same Redis (another worker), and a direct client."""
    redis_server.flush()
    store = RedisStore(redis_server.url, pool_size=2, timeout=TIMEOUT, cache_stale_seconds=3600)
    other = open_store(redis_server)
    direct = redis_server.client()
    cache_record(store, direct)
    yield store, other, direct
    store.close()
    other.close()
    direct.close()


def test_a_record_read_again_is_served_from_the_worker_cache_also_when_absent(cached):
    store, _, direct = cached
    absent = ("BRZ", "NGDP_R", 1999)
    assert store.get(absent) is None
    assert served_from_cache(store, absent, direct) and store.get(absent) is None


def write_elsewhere(other, direct, write):
    {"put": lambda: other.put(KEY, 2),
     "delete": lambda: other.delete(KEY),
     "bulk": lambda: other.submit_bulk([(KEY, 2)]) and other.wait_idle(WAIT_SECONDS),
     "FLUSHALL": direct.flushall}[write]()


@pytest.mark.parametrize("write, value", [("put", 2), ("delete", None), ("bulk", 2), ("FLUSHALL", None)])
def test_a_write_by_another_worker_reaches_the_cache(cached, write, value):
    store, other, direct = cached
    write_elsewhere(other, direct, write)
    wait_for(lambda: gevent.sleep(0.001) or store.get(KEY) == value, timeout=5)


@pytest.mark.parametrize("write, value", [("put", 2), ("delete", None)])
def test_a_worker_reads_its_own_writes_at_once(cached, write, value):
    store, _, _ = cached
    if write == "put":
        store.put(KEY, 2)
    else:
        store.delete(KEY)
    assert store.get(KEY) == value  # without yielding: the invalidation from Redis is not read yet


def test_the_cache_is_emptied_when_its_invalidations_are_cut_off(cached):
    store, _, direct = cached
    direct.client_kill_filter(_type="pubsub")
    direct.hset("growth:s:BRZ/NGDP_R", 2002, 2)  # its invalidation has nowhere to go
    wait_for(lambda: gevent.sleep(0.001) or store.get(KEY) == 2, timeout=5)
    wait_for(lambda: served_from_cache(store, KEY, direct), timeout=5)  # on again once reconnected


def test_a_cached_read_misses_no_write_acknowledged_longer_ago_than_the_bound(redis_server):
    redis_server.flush()
    bound = 0.5
    store = RedisStore(redis_server.url, pool_size=2, timeout=TIMEOUT, cache_stale_seconds=bound)
    try:
        with redis_server.client() as direct:
            cache_record(store, direct)
            direct.hset("growth:s:BRZ/NGDP_R", 2002, 2)
            acknowledged = time.monotonic()
            # From here nothing yields to the store's greenlets, so the invalidation stays unread:
            # the cache answers the old value, until the bound has passed.
            assert store.get(KEY) == 1
            wait_for(lambda: store.get(KEY) == 2, timeout=5)
            assert time.monotonic() - acknowledged <= bound + 0.05
    finally:
        store.close()


def cache_subscribers(direct):
    return direct.pubsub_numsub(INVALIDATIONS)[0][1]


@pytest.mark.parametrize("environ, cached", [({}, True), ({"GROWTH_REDIS_CACHE_STALE_SECONDS": "0"}, False)])
def test_growth_redis_cache_stale_seconds_0_turns_the_cache_off_so_that_every_read_asks_redis(own_redis,
                                                                                               environ, cached):
    store = cli.open_store(Config.from_env({"GROWTH_STORE": own_redis.url, **environ}))
    try:
        with own_redis.client() as direct:
            store.put(KEY, 1)
            # With a cache, all but the first few of these reads are served from it.
            reads_from_cache = sum(served_from_cache(store, KEY, direct) for _ in range(20))
            assert (reads_from_cache > 0, cache_subscribers(direct)) == (cached, int(cached))
    finally:
        store.close()


def grid_records():
    """4 countries of 3 indicators of 6 years (one series holding only negative years), 72 records."""
    return [((country, indicator, year if indicator != "N" else -year), year * 10 + len(country))
            for country in ("AA", "B", "CC", "D") for indicator in ("M", "N", "P") for year in range(1, 7)]


QUERIES = [{}, {"offset": 5, "limit": 7}, {"offset": 70}, {"limit": 1000}, {"first": 2, "last": 4},
           {"first": 2, "last": 4, "offset": 10, "limit": 5}, {"first": -3, "last": 3}, {"first": 3, "last": 3},
           {"first": 5}, {"last": -2, "offset": 1}, {"country": "CC", "first": 2, "last": 5, "offset": 2},
           {"indicator": "P", "offset": 3, "limit": 4}, {"country": "B", "indicator": "N"}, {"country": "E"},
           {"first": 7, "last": 9}]


@pytest.mark.parametrize("budget", [1, 5, 13, 10_000])
def test_a_list_query_read_in_several_scripts_answers_as_the_memory_store(redis_server, monkeypatch, budget):
    monkeypatch.setattr(redis_store, "SCAN_BUDGET", budget)
    redis_server.flush()
    store, memory = open_store(redis_server), memory_store()
    try:
        for each in (store, memory):
            each.submit_bulk(grid_records())
            assert each.wait_idle(WAIT_SECONDS)
        for query in QUERIES:
            assert store.records(**query) == memory.records(**query), query
    finally:
        store.close()
        memory.close()


def test_a_list_query_across_the_store_examines_at_most_the_budget_per_script(fresh, redis_server, monkeypatch):
    """A script stops at the series that reaches SCAN_BUDGET: with 20, two series of 6 years and 4 each."""
    monkeypatch.setattr(redis_store, "SCAN_BUDGET", 20)
    monkeypatch.setattr(redis_store, "SCAN_SERIES_COST", 4)
    fresh.submit_bulk(grid_records())
    assert fresh.wait_idle(WAIT_SECONDS)
    with redis_server.client() as direct:
        direct.config_resetstat()
        assert fresh.records(first=1, last=6)[0] == 48
        # 12 series, 2 per script, and a last script that finds none after them.
        assert direct.info("commandstats")["cmdstat_evalsha"]["calls"] == 7


@pytest.mark.live
def test_the_cache_follows_a_redis_on_a_unix_socket(tmp_path):
    path = tmp_path / "redis.sock"
    server = RedisServer(settings=["--unixsocket", str(path), "--unixsocketperm", "700"]).start()
    store = RedisStore(f"unix://{path}", pool_size=2, timeout=TIMEOUT, cache_stale_seconds=3600)
    try:
        with server.client() as direct:
            cache_record(store, direct)
            direct.hset("growth:s:BRZ/NGDP_R", 2002, 2)
            wait_for(lambda: gevent.sleep(0.001) or store.get(KEY) == 2, timeout=5)
    finally:
        store.close()
        server.stop()


def in_greenlets(count, call):
    """``call()`` from ``count`` greenlets at once: what each returned, or the StoreUnavailable it raised."""
    greenlets = [gevent.spawn(unavailable_or_value, call) for _ in range(count)]
    gevent.joinall(greenlets, raise_error=True)
    return [greenlet.value for greenlet in greenlets]


def unavailable_or_value(call):
    try:
        return call()
    except StoreUnavailable as error:
        return error


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
    store = redis_store.RedisStore(redis_server.url, pool_size=1, timeout=TIMEOUT)
    pool = store._redis.connection_pool
    held = pool.get_connection()
    try:  # waiting for the pool, each would raise StoreUnavailable after TIMEOUT
        assert store.bulk_status().jobs_accepted == 0
        store.check_bulk_room(1)
        assert store.get(KEY) is None and store.size() == 0
    finally:
        pool.release(held)
        store.close()


def test_past_the_queue_of_commands_requests_are_refused_at_once(fresh, monkeypatch):
    monkeypatch.setattr(redis_store, "MAX_QUEUED_COMMANDS", 3)
    fresh.size()  # connected
    outcomes = in_greenlets(5, fresh.size)
    assert outcomes[:3] == [0, 0, 0]  # served in the order they came
    assert all("3 commands are already waiting for Redis" in str(outcome) for outcome in outcomes[3:])


def test_a_connection_that_redis_closed_while_idle_is_replaced_before_a_write_is_sent(fresh, redis_server):
    assert fresh.put(KEY, 1) is True
    with redis_server.client() as direct:
        assert direct.client_kill_filter(_type="normal", skip_me=True) >= 1
    assert fresh.put(KEY, 2) is False  # sent on a new connection, not lost on the closed one
    assert fresh.get(KEY) == 2
