"""What tests/api/test_export.py tests, where it takes a process: pandas reading the export and the CSV pages of a
live server, and a client that decodes gzip, on one process and on two workers over Redis."""

import gzip
import io
import json
import os
import random
import signal
import socket
import threading
import urllib.request

import pandas
import psutil
import pytest

from growth_gevent.testing import LISTENING, START_SECONDS
from scripts.generate_data import generate
from tests.helpers.support import two_workers_on_redis
from tests.http.test_server_connections_live import rss_bytes
from tests.stores.test_redis_tallies_live import BUILT, as_written_before_tallies

EXPORTED_RECORDS = 2500  # three batches of the store's


@pytest.fixture(params=["memory", "redis, 2 workers"])
def loaded_server(request, servers):
    env = {} if request.param == "memory" else two_workers_on_redis(request)
    server = servers(**env)
    records = generate(EXPORTED_RECORDS, seed=7)
    assert server.request_json("POST", "/api/v1/growth", records)[0] == 202
    server.wait_until_complete()
    return server, records


def frame(records):
    """What pandas reads of ``records``, in the list's order."""
    frame = pandas.DataFrame(records, columns=["Country", "Indicator", "Value", "Year"])
    return frame.sort_values(["Country", "Indicator", "Year"], ignore_index=True)


def test_pandas_reads_every_record_from_the_export_and_the_count_from_a_csv_page(loaded_server):
    server, records = loaded_server
    base = f"http://127.0.0.1:{server.port}/api/v1/growth"
    expected = frame(records)
    pandas.testing.assert_frame_equal(pandas.read_csv(f"{base}/export?format=csv"), expected)
    pandas.testing.assert_frame_equal(pandas.read_json(f"{base}/export?format=ndjson", lines=True), expected)
    pandas.testing.assert_frame_equal(pandas.read_json(f"{base}/export"), expected)
    with urllib.request.urlopen(f"{base}?format=csv&limit=1000") as response:
        assert int(response.headers["X-Total-Count"]) == EXPORTED_RECORDS
        page = pandas.read_csv(response)
    pandas.testing.assert_frame_equal(page, expected[:1000])


def test_a_gzip_client_gets_the_export_streamed_and_compressed(loaded_server):
    server, records = loaded_server
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}/api/v1/growth/export?format=ndjson",
                                     headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request) as response:
        assert response.headers["Transfer-Encoding"] == "chunked"
        assert response.headers["Content-Encoding"] == "gzip"
        body = response.read()
    assert pandas.read_json(io.BytesIO(gzip.decompress(body)), lines=True).equals(frame(records))
    assert len(body) * 3 < len(gzip.decompress(body))


def test_facets_of_a_live_server_count_what_the_list_counts(loaded_server):
    server, records = loaded_server
    status, countries = server.request_json("GET", "/api/v1/growth/countries")
    assert status == 200
    counts = frame(records).groupby("Country")["Year"].agg(["count", "min", "max"])
    assert [(item["Country"], item["records"], item["from"], item["to"]) for item in countries["items"]] == [
        (name, row["count"], row["min"], row["max"]) for name, row in counts.iterrows()]


def assert_facets_are_the_exports(server):
    """Each facet as every worker answers it (asked a few times: the kernel picks the worker) is what pandas
    counts from the export."""
    base = f"http://127.0.0.1:{server.port}/api/v1/growth"
    exported = pandas.read_json(f"{base}/export", dtype={"Country": str, "Indicator": str})
    answers, counted = set(), []
    for field, path in (("Country", "countries"), ("Indicator", "indicators")):
        counts = exported.groupby(field)["Year"].agg(["count", "min", "max"])
        counted.append([(name, row["count"], row["min"], row["max"]) for name, row in counts.iterrows()])
        for _ in range(4):
            items = server.request_json("GET", f"/api/v1/growth/{path}")[1]["items"]
            answers.add((field, json.dumps([(item[field], item["records"], item["from"], item["to"])
                                            for item in items])))
    assert sorted(answers) == sorted((field, json.dumps(rows, default=int))
                                     for field, rows in zip(("Country", "Indicator"), counted, strict=True))


def churn(server, seed, writes=60):
    """Two clients at once, each on its connections: random PUTs, DELETEs and small bulk loads, applied."""
    def client(rng):
        for _ in range(writes):
            country, indicator, year = rng.choice("ABCD"), rng.choice("WXYZ"), rng.randrange(1990, 2000)
            action, path = rng.random(), f"/api/v1/growth/{country}/{indicator}/{year}"
            if action < 0.45:
                assert server.request_json("PUT", path, {"value": rng.randrange(9)})[0] in (200, 201)
            elif action < 0.9:
                assert server.request("DELETE", path)[0] in (204, 404)
            else:
                bulk = [{"Country": rng.choice("ABCD"), "Indicator": rng.choice("WXYZ"), "Value": 1,
                         "Year": rng.randrange(1990, 2000)} for _ in range(rng.randrange(1, 12))]
                assert server.request_json("POST", "/api/v1/growth", bulk)[0] == 202

    clients = [threading.Thread(target=client, args=(random.Random(seed + n),)) for n in range(2)]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join()
    server.wait_until_complete()


def test_facets_of_two_workers_stay_the_exports_through_churn_a_worker_killed_and_an_upgrade(
        servers, request, redis_server):
    env = two_workers_on_redis(request)
    server = servers(**env)
    server.wait_for_line(LISTENING, START_SECONDS)  # both workers listen
    churn(server, 1)
    assert_facets_are_the_exports(server)
    os.kill(psutil.Process(server.process.pid).children()[0].pid, signal.SIGKILL)
    server.wait_for_line(LISTENING, START_SECONDS)  # the worker started again
    churn(server, 2)
    assert_facets_are_the_exports(server)
    # The store as a version without tallies left it, the service started again: built once, at start-up.
    server.stop()
    as_written_before_tallies(redis_server)
    server = servers(**env)
    server.wait_for_line(LISTENING, START_SECONDS)
    churn(server, 3)
    assert_facets_are_the_exports(server)
    server.read_available_lines()
    assert sum(BUILT in line for line in server.lines) == 1, server.lines


STALLED_READERS = 20
STALLED_RSS_GROWTH_MIB = 24  # each stalled export holds its send buffer and one batch, not the export
ALL_RECORDS = 42450  # the challenge's 3 MB file's count: a 3 MB export


def test_exports_nobody_reads_hold_a_bounded_memory_and_others_are_served(servers):
    """20 clients ask for the whole export with a tiny receive window and stop reading after its first bytes:
    each export waits on its socket, holding what is in flight, not the 3 MB; a PUT, a GET and a whole export
    by another client are answered meanwhile."""
    server = servers()
    records = generate(ALL_RECORDS, seed=3)
    assert server.request_json("POST", "/api/v1/growth", records)[0] == 202
    server.wait_until_complete()
    whole = len(urllib.request.urlopen(f"http://127.0.0.1:{server.port}/api/v1/growth/export").read())
    before = rss_bytes(server.process.pid)
    stalled = []
    for _ in range(STALLED_READERS):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window it offers
        sock.settimeout(10)
        sock.connect(("127.0.0.1", server.port))
        sock.sendall(b"GET /api/v1/growth/export HTTP/1.1\r\nHost: t\r\n\r\n")
        assert sock.recv(12, socket.MSG_PEEK) == b"HTTP/1.1 200"  # its export has started, then it reads no more
        stalled.append(sock)
    try:
        held = rss_bytes(server.process.pid)
        assert (held - before) / 2 ** 20 < STALLED_RSS_GROWTH_MIB, (before, held)
        assert server.request_json("PUT", "/api/v1/growth/ZZZ/NGDP_R/2000", {"value": 1})[0] == 201
        assert server.request("GET", "/api/v1/growth/ZZZ/NGDP_R/2000")[0] == 200
        export = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/api/v1/growth/export", timeout=30)
        assert len(export.read()) > whole
        print(f"\n{STALLED_READERS} stalled exports of {whole:,} B: RSS {before / 2**20:.1f} -> {held / 2**20:.1f} MiB")
    finally:
        for sock in stalled:
            sock.close()
