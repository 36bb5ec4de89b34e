"""A short headless Locust run of scripts/locustfile.py against a live server, so that the locustfile cannot
rot: every kind of request it makes is made, and none fails. Locust exits 1 when a request failed (a wrong
status or body) or when a kind of request is slower than the locustfile's bounds (LATENCY_LIMITS_MS); these
runs switch the bounds off (LATENCY_LIMITS=off): how fast is the bench's to measure, not a pass/fail test's
on a machine busy with other work."""

import json
import os
import pathlib
import socket
import subprocess
import sys
import threading
from http.server import ThreadingHTTPServer

import pytest

from tests.helpers.load_tools import SlowService
from tests.helpers.support import ROOT, SAMPLE

pytestmark = pytest.mark.serial  # load generators: they load the machine

LOCUST = pathlib.Path(sys.executable).parent / "locust"
LOCUSTFILE = ROOT / "scripts" / "locustfile.py"
RECORD_PATH = "/api/v1/growth/BRZ/NGDP_R/2002"
# BulkPostUser (one, whatever -u says) and two ReadUpdateUsers without think time (SLEEP=0): hundreds of
# requests in 3 s, so that each of the readers' three kinds, chosen at random, is made.
SMOKE_RUN = ["--users", "3", "--spawn-rate", "3", "--run-time", "3s"]
REQUEST_KINDS = {("GET", "/ping"), ("GET", RECORD_PATH), ("PUT", RECORD_PATH), ("POST", "/api/v1/growth"),
                 ("GET", "/api/v1/growth/post/status"), ("BULK", "load applied")}
RUN_TIMEOUT_SECONDS = 60
# The smoke run is against a server that requires a token for writes, which the locustfile reads from
# GROWTH_API_TOKEN: without it every write would be a 401, a failure.
TOKEN = "locust-smoke-token-0123456789"


def locust_run(host, directory, arguments, **env):
    """Locust headless against ``host``, without think time, BulkPostUser posting data/sample.json: its run and
    its final stats."""
    assert LOCUST.exists(), f"{LOCUST} is missing: pip install -r requirements-dev.txt installs Locust"
    stats = directory / "stats"
    run = subprocess.run(
        [str(LOCUST), "--locustfile", str(LOCUSTFILE), "--host", host, "--headless", "--only-summary",
         "--json-file", str(stats), *arguments],
        check=False, cwd=directory,
        env={**os.environ, "FILE": str(SAMPLE), "SLEEP": "0", "LATENCY_LIMITS": "off", **env},
        capture_output=True, text=True, timeout=RUN_TIMEOUT_SECONDS)
    return run, json.loads(stats.with_suffix(".json").read_text())


def test_locustfile_makes_every_kind_of_request_and_none_fails(servers, tmp_path):
    server = servers(GROWTH_API_TOKENS=TOKEN)
    run, stats = locust_run(f"http://127.0.0.1:{server.port}", tmp_path, SMOKE_RUN, GROWTH_API_TOKEN=TOKEN)
    assert run.returncode == 0, run.stderr
    counts = {(entry["method"], entry["name"]): (entry["num_requests"], entry["num_failures"]) for entry in stats}
    assert set(counts) == REQUEST_KINDS, counts
    assert all(requests > 0 and failures == 0 for requests, failures in counts.values()), counts


def test_failed_requests_make_locust_exit_1(tmp_path):
    with socket.socket() as unused:  # bound, not listening: every connection is refused
        unused.bind(("127.0.0.1", 0))
        run, stats = locust_run(f"http://127.0.0.1:{unused.getsockname()[1]}", tmp_path,
                                ["--users", "2", "--spawn-rate", "2", "--run-time", "2s"])
    assert run.returncode == 1, run.stderr
    assert sum(entry["num_failures"] for entry in stats) > 0


@pytest.mark.parametrize("limits, exit_code", [("off", 0), ("on", 1)])
def test_a_slow_but_right_service_fails_the_run_only_with_the_latency_bounds_on(tmp_path, limits, exit_code):
    slow = ThreadingHTTPServer(("127.0.0.1", 0), SlowService)
    threading.Thread(target=slow.serve_forever, daemon=True).start()
    try:
        run, stats = locust_run(f"http://127.0.0.1:{slow.server_port}", tmp_path,
                                ["--users", "2", "--spawn-rate", "2", "--run-time", "2s"],
                                FILE=str(tmp_path / "none.json"), LATENCY_LIMITS=limits)
    finally:
        slow.shutdown()
        slow.server_close()
    assert run.returncode == exit_code, run.stderr
    assert sum(entry["num_failures"] for entry in stats) == 0
    assert ("limits 100 ms and 250 ms" in run.stderr) == (limits == "on")
