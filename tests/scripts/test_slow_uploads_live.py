"""scripts/benchmark/slow_uploads.py, as it is run: a server of its own, uploads from 127.0.0.2, and the other
client's writes counted by status."""

import re
import subprocess
import sys

from tests.helpers.support import ROOT


def test_the_slow_upload_bench_prints_the_other_clients_statuses_and_the_rss():
    result = subprocess.run([sys.executable, "-m", "scripts.benchmark.slow_uploads", "--uploads", "20",
                             "--seconds", "0.5"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    during = result.stdout.split("during 20 slow uploads from 127.0.0.2:\n")[1]
    assert re.search(r"^  PUT  \{200: [0-9]+\}  median [0-9.]+ ms, p99 [0-9.]+ ms, max [0-9.]+ ms, "
                     r"refused for 0.0 s at most$", during, re.M)
    assert re.search(r"^  POST \{202: [0-9]+\}  median", during, re.M)
    assert re.search(r"^  RSS [0-9]+ MiB$", during, re.M)
