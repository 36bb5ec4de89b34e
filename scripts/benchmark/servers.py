"""The servers under load: started on the server CPU with the project's live-server harness
(growth_gevent.testing), given the record the reads GET and the bulk loads they post."""

import contextlib
import http.client
import json
import sys
import time

from growth_gevent.testing import LISTENING, START_SECONDS, LiveServer, wait_for

from .procfs import SERVER_CPU, on_cpu

SERVICE = (sys.executable, "-m", "growth_gevent")
CEILING = (sys.executable, "scripts/ceiling.py")
RECORD_PATH = "/api/v1/growth/BRZ/NGDP_R/2002"
BULK_PATH = "/api/v1/growth"
STATUS_PATH = "/api/v1/growth/post/status"
JSON_HEADERS = {"Content-Type": "application/json"}
# Status polls: fine when a load's own time is measured (known to this much), coarse while reads are
# measured, so that the polls take next to nothing from the server's CPU.
TIMING_POLL_SECONDS = 0.005
BACKGROUND_POLL_SECONDS = 0.02
SETTLE_SECONDS = 120


def start(stack, command=SERVICE, workers=1, **env):
    """A live server on the server CPU, stopped when ``stack`` closes, once every worker listens."""
    with on_cpu(SERVER_CPU):
        server = LiveServer(command, WEB_CONCURRENCY=str(workers), **env).start()
    stack.callback(server.stop)
    for _ in range(workers - 1):  # every worker logs its own "listening on"
        server.wait_for_line(LISTENING, START_SECONDS)
    return server


@contextlib.contextmanager
def fresh_server():
    """An in-memory server of its own, holding only the record that the reads GET."""
    with contextlib.ExitStack() as stack:
        server = start(stack)
        put_record(server)
        yield server


def url(server):
    return f"http://127.0.0.1:{server.port}"


def stop_gracefully(server):
    server.terminate()
    server.wait_exit(30)


def logged(server, pattern):
    """The match of ``pattern`` in what the server has logged, waiting for it if it has not come yet."""
    return next(filter(None, map(pattern.search, server.lines)), None) or server.wait_for_line(pattern, START_SECONDS)


def put_record(server):
    """The record that the read rows GET, on a fresh server."""
    status, body = server.request("PUT", RECORD_PATH, b'{"value": 183.26}', JSON_HEADERS)
    if status not in (200, 201):
        raise SystemExit(f"PUT {RECORD_PATH} answered {status}: {body[:200]}")


def bulk_status(server):
    return json.loads(server.request("GET", STATUS_PATH)[1])


def load(server, payload, poll_seconds=BACKGROUND_POLL_SECONDS):
    """POST a bulk payload and poll until it is applied; the seconds from POST to complete."""
    started = time.perf_counter()
    status, body = server.request("POST", BULK_PATH, payload, JSON_HEADERS)
    if status != 202:
        raise SystemExit(f"bulk POST answered {status}: {body[:200]}")
    jobs = bulk_status(server)["jobs accepted"]

    def applied():
        status = bulk_status(server)
        return status["msg"] == "complete" and status["jobs applied"] >= jobs

    wait_for(applied, SETTLE_SECONDS, poll_seconds)
    return time.perf_counter() - started


def settle(server):
    """Wait until nothing accepted is left to apply, so that it does not weigh on the next row."""
    wait_for(lambda: bulk_status(server)["msg"] == "complete", SETTLE_SECONDS, BACKGROUND_POLL_SECONDS)


def post_status(server, payload):
    """One bulk POST, as a flooding client sends it: its status, or the error that replaced one."""
    try:
        return server.request("POST", BULK_PATH, payload, JSON_HEADERS)[0]
    except (OSError, http.client.HTTPException) as error:
        return type(error).__name__
