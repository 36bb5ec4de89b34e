"""The k6 scenarios of scripts/k6/ for Locust: the read/update mix and the bulk POST.

    locust -f scripts/locustfile.py --host http://127.0.0.1:8080 --headless -u 50 -r 10 -t 30s

ReadUpdateUser is the challenge's read/update mix: ping, GET BRZ/NGDP_R/2002, PUT a new value, in equal
shares, a request a second per user like the k6 script's think time; SLEEP is that think time in seconds,
as in the k6 scripts (SLEEP=0: a throughput test with the same bounds). BulkPostUser, one user whatever -u
says, POSTs data/growth-500kb.json and polls /api/v1/growth/post/status until the load is complete; the
time from the 202 to "complete" is reported as "BULK load applied". It is left out when the file is absent:
make it with `python scripts/generate_data.py --records 4537 --indent 4 data/growth-500kb.json`, or point FILE at
another one (FILE=data/growth-3mb.json; relative to the working directory).

With GROWTH_API_TOKEN set in the environment, writes carry it as a bearer token (for a server with
GROWTH_API_TOKENS). A wrong status code or body is a failure, and any failure makes Locust exit 1. So does
a request kind whose p95 or p99 exceeds the bounds of the k6 scripts' thresholds (LATENCY_LIMITS_MS),
unless LATENCY_LIMITS=off: a run that checks what is answered, not how fast (the test suite's smoke run,
on a machine busy with other work; speed is the bench's to measure).
"""

import json
import logging
import os
import pathlib
import random
import time

import gevent
from locust import HttpUser, constant, events, task

RECORD_PATH = "/api/v1/growth/BRZ/NGDP_R/2002"
_TOKEN = os.environ.get("GROWTH_API_TOKEN", "").strip()
JSON_HEADERS = {"Content-Type": "application/json", **({"Authorization": f"Bearer {_TOKEN}"} if _TOKEN else {})}
BULK_FILE = pathlib.Path(
    os.environ.get("FILE", pathlib.Path(__file__).resolve().parent.parent / "data" / "growth-500kb.json")
)
MAX_STATUS_POLLS = 200
POLL_INTERVAL_SECONDS = 0.05

# (p95, p99) in milliseconds by request method, the same bounds as the k6 scripts' thresholds.
LATENCY_LIMITS_MS = {"POST": (1000, 2000), "BULK": (5000, 10000)}
DEFAULT_LATENCY_LIMITS_MS = (100, 250)
CHECK_LATENCY = os.environ.get("LATENCY_LIMITS", "on") != "off"
log = logging.getLogger("locustfile")


def record_problem(response, expected_status):
    """Why ``response`` is not BRZ/NGDP_R/2002 with ``expected_status``, or None when it is."""
    if response.status_code not in expected_status:
        return f"status {response.status_code}, expected {' or '.join(map(str, expected_status))}"
    try:
        record = response.json()
    except ValueError:
        return f"body is not JSON: {response.text[:100]!r}"
    if (record.get("Country"), record.get("Indicator"), record.get("Year")) != ("BRZ", "NGDP_R", 2002):
        return f"not the record BRZ/NGDP_R/2002: {record}"
    return None


class ReadUpdateUser(HttpUser):
    wait_time = constant(float(os.environ.get("SLEEP", "1")))  # the k6 script's think time

    def on_start(self):
        # The record must exist before the first GET, or a fresh server answers 404s until a PUT lands.
        self.put_record_value(183.26, expected_status=(200, 201))

    @task
    def ping(self):
        with self.client.get("/ping", catch_response=True) as response:
            if response.status_code != 200 or response.text != "pong":
                response.failure(f"status {response.status_code}, body {response.text[:100]!r}")

    @task
    def get_record(self):
        with self.client.get(RECORD_PATH, catch_response=True) as response:
            problem = record_problem(response, expected_status=(200,))
            if problem is None and not isinstance(response.json().get("Value"), (int, float)):
                problem = f"Value is not a number: {response.text[:100]!r}"
            if problem:
                response.failure(problem)

    @task
    def put_record(self):
        # A different value each time, so that the answer shows this very write was applied.
        self.put_record_value(round(random.uniform(0, 1000), 2), expected_status=(200,))

    def put_record_value(self, value, expected_status):
        with self.client.put(RECORD_PATH, data=json.dumps({"value": value}), headers=JSON_HEADERS,
                             catch_response=True) as response:
            problem = record_problem(response, expected_status)
            if problem is None and response.json().get("Value") != value:
                problem = f"Value is not the {value} just sent: {response.text[:100]!r}"
            if problem:
                response.failure(problem)


class BulkPostUser(HttpUser):
    abstract = not BULK_FILE.is_file()  # nothing to post without the data file
    fixed_count = 1  # one bulk load at a time, beside however many readers -u asks for
    wait_time = constant(5)

    def on_start(self):
        self.payload = BULK_FILE.read_bytes()  # sent as read: re-serialising it would only measure Python
        self.record_count = len(json.loads(self.payload))

    @task
    def bulk_post(self):
        with self.client.post("/api/v1/growth", data=self.payload, headers=JSON_HEADERS,
                              catch_response=True) as response:
            if response.status_code != 202 or response.json().get("msg") != "In progress":
                response.failure(f"status {response.status_code}, body {response.text[:100]!r}")
                return
        accepted_at = time.perf_counter()
        status = self.poll_until_complete()
        failure = None
        if status is None:
            failure = AssertionError(f"load not complete after {MAX_STATUS_POLLS} polls")
        elif status.get("count") != self.record_count or status.get("count") != status.get("total"):
            failure = AssertionError(f"expected count == total == {self.record_count}, got {status}")
        # Reported as a request of its own, so that the load's duration has its own line and percentiles.
        self.environment.events.request.fire(
            request_type="BULK", name="load applied", response_time=(time.perf_counter() - accepted_at) * 1000,
            response_length=0, exception=failure, context={},
        )

    def poll_until_complete(self):
        """The status document once it says complete, or None after MAX_STATUS_POLLS polls."""
        for _ in range(MAX_STATUS_POLLS):
            with self.client.get("/api/v1/growth/post/status", catch_response=True) as response:
                if response.status_code != 200:
                    response.failure(f"status {response.status_code}")
                    return None
                status = response.json()
            if status.get("msg") == "complete":
                return status
            gevent.sleep(POLL_INTERVAL_SECONDS)
        return None


@events.init.add_listener
def warn_without_bulk_file(environment, **_kwargs):
    if BulkPostUser.abstract:
        log.warning("%s not found: running without BulkPostUser", BULK_FILE)


@events.quitting.add_listener
def fail_on_slow_requests(environment, **_kwargs):
    if not CHECK_LATENCY:
        return
    for entry in environment.stats.entries.values():
        p95_limit, p99_limit = LATENCY_LIMITS_MS.get(entry.method, DEFAULT_LATENCY_LIMITS_MS)
        p95 = entry.get_response_time_percentile(0.95)
        p99 = entry.get_response_time_percentile(0.99)
        if p95 > p95_limit or p99 > p99_limit:
            log.error("%s %s: p95 %s ms, p99 %s ms; limits %s ms and %s ms",
                      entry.method, entry.name, p95, p99, p95_limit, p99_limit)
            environment.process_exit_code = 1
