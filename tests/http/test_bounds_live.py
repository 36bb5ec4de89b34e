"""Bounded memory under a POST flood, against a live server process (what only a socket shows)."""

import json
import threading
import time

import pytest

from scripts.generate_data import generate
from tests.helpers.support import two_workers_on_redis

FLOOD_CLIENTS = 10
FLOOD_SECONDS = 4
# ~500 kB, like the challenge's 500 kB file: 6,800 records.
FLOOD_RECORDS = 6800
# Two jobs' worth; small chunks make the applier share the loop with ten posters, so the queue fills.
FLOOD_ENV = {"GROWTH_BULK_QUEUE_RECORDS": str(2 * FLOOD_RECORDS), "GROWTH_BULK_CHUNK_RECORDS": "100"}
# Measured: ~40 MB idle, ~60-70 MB peak through the flood (one 500 kB parse at a time, ten bodies held,
# a queue of 13,600 records). Unbounded, the same flood grew by ~45 MB a second (1.4 GB in 30 s).
FLOOD_PEAK_RSS_MB = 120


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.mark.serial  # a flood; its reads' latency and the peak RSS
def test_a_post_flood_is_bounded_refused_with_retry_after_and_reads_go_on(servers):
    server = servers(**FLOOD_ENV)
    body = json.dumps(generate(FLOOD_RECORDS, seed=7)).encode()
    answers, reads = [], []
    deadline = time.monotonic() + FLOOD_SECONDS

    def post_back_to_back():
        connection = server.connection(timeout=30)
        while time.monotonic() < deadline:
            connection.request("POST", "/api/v1/growth", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            answers.append((response.status, response.getheader("Retry-After"), json.loads(response.read())))
            if response.getheader("Connection") == "close":
                connection.close()
                connection = server.connection(timeout=30)
        connection.close()

    def read_back_to_back():
        connection = server.connection(timeout=30)
        while time.monotonic() < deadline:
            started = time.perf_counter()
            connection.request("GET", "/api/v1/growth/BRZ/NGDP_R/2002")
            response = connection.getresponse()
            response.read()
            reads.append((response.status, time.perf_counter() - started))
        connection.close()

    threads = [threading.Thread(target=post_back_to_back) for _ in range(FLOOD_CLIENTS)]
    threads.append(threading.Thread(target=read_back_to_back))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    statuses = [status for status, _, _ in answers]
    refused = [(retry_after, document) for status, retry_after, document in answers if status == 503]
    assert set(statuses) == {202, 503}, statuses
    assert all(retry_after == "1" for retry_after, _ in refused)
    assert {document["msg"].split(":")[0] for _, document in refused} <= {
        "bulk queue is full", "too many bulk loads waiting to be parsed; retry later"}
    assert reads and {status for status, _ in reads} <= {200, 404}
    peak = peak_rss_mb(server.process.pid)
    status = server.wait_until_complete()
    assert status["jobs accepted"] == statuses.count(202)
    print(f"\n{len(answers)} posts: {statuses.count(202)} accepted, {len(refused)} refused (503); {len(reads)} reads, "
          f"slowest {max(seconds for _, seconds in reads) * 1000:.1f} ms; peak RSS {peak:.1f} MB")
    assert peak < FLOOD_PEAK_RSS_MB


@pytest.fixture(params=["memory", "redis, 2 workers"])
def capped_server(request, servers):
    """A live server holding at most CAP_RECORDS records, on each store."""
    env = {} if request.param == "memory" else two_workers_on_redis(request)
    return servers(GROWTH_MAX_RECORDS=str(CAP_RECORDS), **env)


CAP_RECORDS = 10


def test_past_the_record_cap_new_keys_are_507_replacing_works_and_a_bulk_load_queues_nothing(capped_server):
    server = capped_server
    records = generate(CAP_RECORDS + 5, seed=7)
    status, _ = server.request_json("POST", "/api/v1/growth", records[:CAP_RECORDS - 1])
    assert status == 202
    server.wait_until_complete()
    first, last = records[0], records[CAP_RECORDS - 1]

    def put(record, value):
        return server.request_json("PUT", f"/api/v1/growth/{record['Country']}/{record['Indicator']}/{record['Year']}",
                                   {"value": value})

    assert put(last, 1.5)[0] == 201  # the last record there is room for
    status, document = put(records[CAP_RECORDS], 1.5)
    assert status == 507
    assert document["msg"].startswith(f"the store is full: it holds at most {CAP_RECORDS} records")
    assert put(first, 2.5) == (200, {**first, "Value": 2.5})
    status, document = server.request_json("POST", "/api/v1/growth", records[CAP_RECORDS:])
    assert status == 507
    assert server.request_json("GET", "/api/v1/growth/post/status")[1]["jobs accepted"] == 1
    assert server.request_json("GET", "/api/v1/growth/size")[1] == {"size": CAP_RECORDS}
    server.request_json("DELETE", f"/api/v1/growth/{first['Country']}/{first['Indicator']}/{first['Year']}")
    assert put(records[CAP_RECORDS], 1.5)[0] == 201
