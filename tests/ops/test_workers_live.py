"""WEB_CONCURRENCY: real worker processes on one port and one Redis, as clients meet them."""

import json
import os
import re
import signal
import socket
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from prometheus_client.parser import text_string_to_metric_families

from growth_gevent.testing import LiveServer, RedisServer, start_fails, wait_for
from tests.helpers.processes import worker_pids
from tests.helpers.support import ROOT, SAMPLE

WORKERS = 2
LISTENING = r'worker=\d msg="listening on'
RECORD = "/api/v1/growth/{}/I/{}"


@pytest.fixture
def workers(servers, redis_server):
    """``workers(**env)``: a server of WORKERS processes on a flushed Redis, every worker listening."""
    redis_server.flush()

    def start(url=redis_server.url, **env):
        server = servers(GROWTH_STORE=url, WEB_CONCURRENCY=str(WORKERS), **env)
        for _ in range(WORKERS - 1):  # start() saw the first worker's line
            server.wait_for_line(LISTENING, 15)
        return server

    return start


def put(server, path, value):
    return server.request("PUT", path, json.dumps({"value": value}).encode(), {"Content-Type": "application/json"})[0]


def all_at_once(count, action):
    """``action(i)`` for i in range(count), from ``count`` threads released together; the results."""
    barrier = threading.Barrier(count)

    def run(i):
        barrier.wait()
        return action(i)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


def assert_answered_by_every_worker(server, method):
    for worker in range(WORKERS):
        pattern = re.compile(rf"worker={worker} .*method={method} ")
        if not any(pattern.search(line) for line in server.lines):
            server.wait_for_line(pattern, 10)


def test_concurrent_writers_on_two_workers_see_one_exact_size_and_status(workers):
    server = workers(GROWTH_ACCESS_LOG="on")
    writers, puts, jobs, job_records = 16, 25, 4, 50

    def write(i):
        if i < jobs:  # some threads post bulk loads while the others put single records
            records = [{"Country": f"B{i}", "Indicator": "I", "Value": year, "Year": year}
                       for year in range(job_records)]
            return [server.request_json("POST", "/api/v1/growth", records)[0]]
        return [put(server, RECORD.format(f"T{i}", year), year) for year in range(puts)]

    statuses = [status for result in all_at_once(writers, write) for status in result]
    assert statuses.count(202) == jobs and statuses.count(201) == (writers - jobs) * puts
    status = server.wait_until_complete()
    assert (status["jobs accepted"], status["jobs applied"]) == (jobs, jobs)
    expected = (writers - jobs) * puts + jobs * job_records
    for _ in range(10):  # whichever worker answers
        assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": expected})
        assert server.request_json("GET", "/api/v1/growth/post/status")[1] == status
    assert server.request_json("GET", "/api/v1/growth?limit=1")[1]["total"] == expected
    assert_answered_by_every_worker(server, "PUT")


def test_racing_puts_create_once_and_racing_deletes_delete_once(workers):
    server = workers(GROWTH_ACCESS_LOG="on")
    racers = 12
    for year in range(5):
        path = RECORD.format("RACE", year)
        assert sorted(all_at_once(racers, lambda i, path=path: put(server, path, i))) == [200] * (racers - 1) + [201]
        deletes = all_at_once(racers, lambda i, path=path: server.request("DELETE", path)[0])
        assert sorted(deletes) == [204] + [404] * (racers - 1)
    assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 0})
    assert_answered_by_every_worker(server, "PUT")
    assert_answered_by_every_worker(server, "DELETE")


def test_a_killed_worker_is_replaced_and_sigterm_stops_every_worker(workers):
    server = workers(GROWTH_ACCESS_LOG="on")
    pid = worker_pids(server, 0)[0]
    assert put(server, RECORD.format("A", 1), 1) == 201
    os.kill(pid, signal.SIGKILL)
    server.wait_for_line(r"worker 0 exited with -9; starting another in", 10)
    server.wait_for_line(r'worker=0 msg="listening on', 15)
    replaced = len(server.lines)

    def the_new_worker_answers():
        assert server.request_json("GET", "/api/v1/growth/A/I/1")[0] == 200
        server.read_available_lines()
        return any(re.search(r"worker=0 .*method=GET", line) for line in server.lines[replaced:])

    wait_for(the_new_worker_answers, timeout=15)
    server.terminate()
    assert server.wait_exit(30) == 0
    assert sum("exited with 0" in line for line in server.lines) == WORKERS
    assert server.lines[-1].endswith("msg=stopped\n")


def test_redis_down_at_start_then_up_then_down_then_up(servers):
    redis = RedisServer()  # not started yet
    server = servers(GROWTH_STORE=redis.url, WEB_CONCURRENCY=str(WORKERS), GROWTH_REDIS_TIMEOUT="0.5")
    try:
        assert server.request("GET", "/ping") == (200, b"pong")
        status, body = server.request("GET", "/api/v1/growth/size")
        assert (status, json.loads(body)) == (503, {"msg": "the store is unavailable, retry later"})
        redis.start()
        wait_for(lambda: server.request("GET", "/api/v1/growth/size")[0] == 200)
        assert put(server, RECORD.format("A", 1), 1) == 201
        redis.stop()
        connection = server.connection()
        connection.request("GET", "/api/v1/growth/A/I/1")
        response = connection.getresponse()
        assert (response.status, response.getheader("Retry-After")) == (503, "1")
        assert json.loads(response.read()) == {"msg": "the store is unavailable, retry later"}
        connection.close()
        redis.start()
        wait_for(lambda: put(server, RECORD.format("A", 1), 2) == 201)
    finally:
        redis.stop()


def test_preload_fills_an_empty_redis_once(workers):
    first = workers(GROWTH_PRELOAD=str(SAMPLE))
    assert first.request_json("GET", "/api/v1/growth/size") == (200, {"size": 9})
    assert put(first, "/api/v1/growth/BRZ/NGDP_R/2002", 1.5) == 200
    first.terminate()
    assert first.wait_exit(30) == 0
    second = workers(GROWTH_PRELOAD=str(SAMPLE))
    assert any("not read: the store already holds 9 records" in line for line in second.lines)
    assert second.request_json("GET", "/api/v1/growth/BRZ/NGDP_R/2002")[1]["Value"] == 1.5


def test_several_workers_on_the_memory_store_refuse_to_start():
    result = start_fails(WEB_CONCURRENCY="2")
    assert result.returncode == 2
    assert "WEB_CONCURRENCY=2 needs a shared store" in result.stderr


def running(pid):
    """True while ``pid`` is a live process (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_workers_stop_by_themselves_when_the_supervisor_is_killed(workers):
    server = workers()
    pids = worker_pids(server)
    assert len(pids) == WORKERS and all(map(running, pids))
    server.process.kill()
    server.process.wait()
    wait_for(lambda: not any(map(running, pids)), timeout=15)
    assert not os.path.exists(metrics_folder(server))  # which the killed supervisor could not remove


def test_sigterm_while_workers_are_still_starting_stops_them_gracefully():
    with socket.socket() as silent:  # a "Redis" that takes connections and never answers: slow start-ups
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        server = LiveServer(GROWTH_STORE=f"redis://127.0.0.1:{silent.getsockname()[1]}/0",
                            WEB_CONCURRENCY=str(WORKERS), GROWTH_REDIS_TIMEOUT="2").launch()
        try:
            server.wait_for_line(rf"worker {WORKERS - 1} started", 15)
            server.terminate()
            assert server.wait_exit(30) == 0
        finally:
            server.stop()
    assert sum("exited with 0" in line for line in server.lines) == WORKERS


def test_sigterm_while_a_dead_worker_awaits_its_restart_starts_no_new_one(workers):
    server = workers()
    pid = worker_pids(server, 0)[0]
    os.kill(pid, signal.SIGKILL)
    server.wait_for_line(r"worker 0 exited with -9; starting another in", 10)
    server.terminate()
    assert server.wait_exit(30) == 0
    restarted = server.lines.index(next(line for line in server.lines if "exited with -9" in line))
    assert not any("started as pid" in line for line in server.lines[restarted:])
    assert sum("exited with 0" in line for line in server.lines) == WORKERS - 1


def test_a_preload_waits_for_a_redis_that_is_down_at_start_and_is_loaded_once(servers):
    redis = RedisServer()  # not started yet
    server = servers(GROWTH_STORE=redis.url, WEB_CONCURRENCY=str(WORKERS), GROWTH_PRELOAD=str(SAMPLE),
                     GROWTH_REDIS_TIMEOUT="0.5")
    try:
        assert server.request("GET", "/api/v1/growth/size")[0] == 503
        redis.start()
        wait_for(lambda: server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 9}))
        status = server.wait_until_complete()
        assert (status["jobs accepted"], status["count"]) == (1, 9)  # one of the two workers loaded it
        # Emptied by clients, then a worker restarts: initial data is not loaded a second time.
        for record in json.loads(SAMPLE.read_text()):
            path = f"/api/v1/growth/{record['Country']}/{record['Indicator']}/{record['Year']}"
            assert server.request("DELETE", path)[0] == 204
        pid = worker_pids(server, 0)[0]
        os.kill(pid, signal.SIGKILL)
        server.wait_for_line(r"worker=0 .*not loaded: .*initial data was loaded before", 15)
        assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 0})
    finally:
        redis.stop()


def procfile_web(servers, **env):
    """The Procfile's web command, run as Heroku runs it: by bash, after the Python buildpack has set
    WEB_CONCURRENCY by dyno size (2 on the smaller dynos) when the app has not."""
    command = (ROOT / "Procfile").read_text().split("web:", 1)[1].strip()
    path = f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"  # its `python` is this one
    return servers(command=["bash", "-c", command], PATH=path, WEB_CONCURRENCY="2", **env)


@pytest.mark.parametrize("store", [None, "", " Memory "])
def test_on_heroku_the_memory_store_runs_one_process_whatever_the_buildpack_set(servers, store):
    server = procfile_web(servers, **({} if store is None else {"GROWTH_STORE": store}))
    assert put(server, RECORD.format("A", 1), 1) == 201
    server.terminate()
    assert server.wait_exit(30) == 0
    assert not any("worker" in line for line in server.lines)


def test_on_heroku_redis_takes_the_buildpacks_web_concurrency(servers, redis_server):
    redis_server.flush()
    server = procfile_web(servers, GROWTH_STORE=redis_server.url)
    server.wait_for_line(LISTENING, 15)  # the second worker
    assert put(server, RECORD.format("A", 1), 1) == 201


def metrics_folder(server):
    return re.search(r"the workers' metrics meet in ([^\s\"]+)", "".join(server.lines)).group(1)


def ping_count(server):
    """What one scrape (a new connection: any worker may answer it) says of GET /ping: requests, and
    the latency histogram's count."""
    status, body = server.request("GET", "/metrics")
    assert status == 200
    samples = {(sample.name, sample.labels.get("route"), sample.labels.get("method"), sample.labels.get("le")):
               sample.value for family in text_string_to_metric_families(body.decode()) for sample in family.samples}
    return (samples.get(("growth_http_requests_total", "/ping", "GET", None), 0),
            samples.get(("growth_http_request_duration_seconds_count", "/ping", None, None), 0))


def test_every_scrape_reads_the_totals_of_every_worker_a_dead_ones_included(workers):
    server = workers(GROWTH_ACCESS_LOG="on")
    folder = metrics_folder(server)
    pings = 60
    for _ in range(pings):
        assert server.request("GET", "/ping")[0] == 200
    assert_answered_by_every_worker(server, "GET")
    assert [ping_count(server) for _ in range(10)] == [(pings, pings)] * 10
    os.kill(worker_pids(server, 0)[0], signal.SIGKILL)
    server.wait_for_line(r'worker=0 msg="listening on', 15)
    assert [ping_count(server) for _ in range(10)] == [(pings, pings)] * 10
    assert os.path.isdir(folder)
    server.terminate()
    assert server.wait_exit(30) == 0
    assert not os.path.exists(folder)
