"""What a process does with its connections, against a real server process: the cap, idle floods,
running out of descriptors, slow readers, and what a stop closes and what it lets finish."""

import json
import os
import pathlib
import re
import resource
import select
import signal
import threading
import time

import pytest

from growth_gevent.testing import LiveServer, closed_by_peer, holds_for, read_response, settled, wait_for
from scripts.generate_data import generate
from tests.helpers.raw_http import HOST, JSON, RECORD, post_head, put_record


@pytest.mark.parametrize("server", [{"GROWTH_MAX_CONNECTIONS": "20"}], indirect=True)
def test_connections_past_the_cap_get_a_503_and_the_cap_frees_up(server):
    held = [server.connection() for _ in range(20)]
    for connection in held:
        connection.request("GET", "/ping")
        connection.getresponse().read()
    refused = server.socket()
    refused.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
    status, headers, body = read_response(refused)
    assert (status, headers["retry-after"], json.loads(body)) == (
        503, "1", {"msg": "too many connections; retry later"})
    assert re.fullmatch("[0-9a-f]{32}", headers["x-request-id"])  # every answer has one, this one too
    assert wait_for(lambda: closed_by_peer(refused))
    for connection in held:
        connection.close()
    assert wait_for(lambda: server.request("GET", "/ping") == (200, b"pong"))
    assert server.wait_for_line("connection limit reached \\(20\\)", 5)


IDLE_CAP = 2000


def rss_bytes(pid):
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE).group(1)) * 1024


@pytest.mark.serial  # thousands of connections, their ports from the range a RedisServer beside it binds in
@pytest.mark.parametrize("server", [{"GROWTH_MAX_CONNECTIONS": str(IDLE_CAP)}], indirect=True)
def test_thousands_of_idle_connections_are_held_past_five_seconds_the_cap_answers_503_a_stop_closes_them(server):
    idle = [server.socket() for _ in range(10)]  # the first connections warm the process up
    for sock in idle:
        sock.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
        read_response(sock)
    before = rss_bytes(server.process.pid)
    first_idle = time.monotonic()
    for _ in range(IDLE_CAP - len(idle)):
        sock = server.socket()
        sock.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
        assert read_response(sock)[0] == 200
        idle.append(sock)
    held = rss_bytes(server.process.pid)
    print(f"\n{IDLE_CAP} idle keep-alive connections: RSS {before / 2**20:.1f} -> {held / 2**20:.1f} MiB, "
          f"{(held - before) / (IDLE_CAP - 10):.0f} bytes per idle connection")
    refused = server.socket()
    refused.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
    assert read_response(refused)[0] == 503
    # Past the old 5 s default every one of them is still open, and the oldest is served again.
    wait_for(lambda: time.monotonic() - first_idle > 5.5, timeout=10, interval=0.1)
    sock = idle[0]
    sock.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
    assert read_response(sock)[0] == 200
    assert not readable(idle[1:])  # none closed by the server
    # A stop closes every one at once, descriptors past select()'s 1024 included.
    started = time.monotonic()
    server.terminate()
    assert server.wait_exit(5) == 0
    print(f"SIGTERM -> exit 0 in {(time.monotonic() - started) * 1000:.0f} ms with {IDLE_CAP} idle connections")
    assert len(readable(idle)) == IDLE_CAP
    assert not [line for line in server.lines if "Traceback" in line]


def readable(sockets):
    """The sockets with something to read (data, or the server's close), without waiting."""
    poll = select.poll()
    for sock in sockets:
        poll.register(sock, select.POLLIN)
    return poll.poll(0)


def test_the_connection_cap_fits_the_descriptor_limit():
    def low_descriptor_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (400, 400))

    live = LiveServer(GROWTH_MAX_CONNECTIONS="10000")
    live.process_options = {"preexec_fn": low_descriptor_limit}
    live.start()
    try:
        assert any("GROWTH_MAX_CONNECTIONS=10000 lowered to 236 to fit the open file limit of 400" in line
                   for line in live.lines)
        clients = [live.socket() for _ in range(320)]
        for sock in clients:
            sock.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
        statuses = [read_response(sock)[0] for sock in clients[:300]]
        assert statuses.count(200) == 236 and statuses.count(503) == 64
        live.read_available_lines()
        assert not [line for line in live.lines if "Traceback" in line or "Too many open files" in line]
        for sock in clients:
            sock.close()
        assert wait_for(lambda: live.request("GET", "/ping") == (200, b"pong"))
    finally:
        live.stop()


def test_running_out_of_descriptors_is_one_log_line_and_a_pause_then_serving_again(server):
    # The cap keeps connections below the limit the process started with; lowering the limit of the
    # running process makes accept() itself fail with EMFILE, as when something else holds descriptors.
    pid = server.process.pid
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (len(os.listdir(f"/proc/{pid}/fd")) + 20, hard))
    flood = [server.socket() for _ in range(60)]
    for sock in flood:
        sock.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
    assert server.wait_for_line("cannot accept connections: EMFILE; pausing accepting for 0.1s", 5)
    waiting = server.socket()
    waiting.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")

    def no_traceback():
        server.read_available_lines()
        return not [line for line in server.lines if "Traceback" in line]

    holds_for(no_traceback, 1)  # out of descriptors for ten pauses, each ending in a failed accept()
    for sock in flood:
        sock.close()
    assert read_response(waiting)[:3:2] == (200, b"pong")  # accepted from the backlog once room came back
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
    assert server.request("GET", "/ping") == (200, b"pong")
    server.read_available_lines()
    assert [line for line in server.lines if "cannot accept" in line or "Traceback" in line] == [
        line for line in server.lines if "cannot accept connections: EMFILE" in line][:1]


def test_sighup_is_a_graceful_stop_and_usr1_usr2_are_ignored(tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    live = LiveServer(GROWTH_SNAPSHOT=str(snapshot), GROWTH_SNAPSHOT_INTERVAL="3600").start()
    try:
        put_record(live)
        for signum in (signal.SIGUSR1, signal.SIGUSR2):
            live.process.send_signal(signum)
            live.wait_for_line(f"{signal.Signals(signum).name} ignored", 5)
        assert live.request("GET", "/ping") == (200, b"pong")
        live.process.send_signal(signal.SIGHUP)
        assert live.wait_exit(5) == 0
    finally:
        live.stop()
    restarted = LiveServer(GROWTH_SNAPSHOT=str(snapshot)).start()
    try:
        assert restarted.request_json("GET", RECORD)[1]["Value"] == 1.5
    finally:
        restarted.stop()


def bulk_post_head(length):
    return post_head(HOST, JSON, b"Content-Length: %d" % length)


def test_sigterm_lets_an_upload_whose_bytes_keep_arriving_finish(server):
    payload = json.dumps(generate(42450, seed=2002)).encode()  # 3 MB, the challenge's size
    slices = [payload[len(payload) * i // 10:len(payload) * (i + 1) // 10] for i in range(10)]
    upload = server.socket()
    upload.sendall(bulk_post_head(len(payload)))
    for index, part in enumerate(slices):  # ten slices over a second
        upload.sendall(part)
        if index == 2:
            server.terminate()
            server.wait_for_line("shutting down", 5)
        time.sleep(0.1)  # the client's pace, not a wait for the server
    status, _, body = read_response(upload)
    assert (status, json.loads(body)) == (202, {"msg": "In progress"})
    assert server.wait_exit(15) == 0


@pytest.mark.serial  # the exit within 1 s
def test_sigterm_closes_idle_and_stalled_connections_at_once(server):
    idle = server.connection()
    idle.request("GET", "/ping")
    idle.getresponse().read()
    stalled = server.socket()
    stalled.sendall(bulk_post_head(100000) + b"[{")
    sent = time.monotonic()
    assert server.request("GET", "/ping") == (200, b"pong")  # the stalled head has been read
    wait_for(lambda: time.monotonic() - sent > 1.2, interval=0.05)  # past the 1 s grace, nothing sent
    started = time.monotonic()
    server.terminate()
    assert wait_for(lambda: closed_by_peer(idle.sock) and closed_by_peer(stalled), timeout=5)
    closed = time.monotonic() - started
    assert server.wait_exit(5) == 0
    stopped = time.monotonic() - started
    print(f"\nidle and stalled connections closed {closed * 1000:.0f} ms after SIGTERM, exit after "
          f"{stopped * 1000:.0f} ms")
    assert stopped < 1.0


SLOW_READERS = 50  # the count
PIPELINED = 200
# How long /ping is timed once the pages stopped: the readers still hold their connections and requests.
HELD_SECONDS = 2
LIST_PAGE = b"GET /api/v1/growth?limit=1000 HTTP/1.1\r\nHost: t\r\n\r\n"
LIST_PAGE_LABELS = {'method="GET"', 'route="/api/v1/growth"', 'status="200"'}


def pages_built(server):
    """List pages answered so far, from /metrics (counted as built, before they are sent)."""
    for line in server.request("GET", "/metrics")[1].decode().splitlines():
        match = re.fullmatch(r"growth_http_requests_total\{(.*)\} ([0-9.e+]+)", line)
        if match and set(match.group(1).split(",")) == LIST_PAGE_LABELS:
            return int(float(match.group(2)))
    return 0


@pytest.mark.serial  # a flood of readers; the /ping p50 under 50 ms
def test_readers_that_pipeline_and_never_read_are_built_few_pages_and_ping_stays_fast(server):
    payload = json.dumps(generate(42450, seed=2002)).encode()
    assert server.request("POST", "/api/v1/growth", payload, {"Content-Type": "application/json"})[0] == 202
    server.wait_until_complete()
    page_bytes = len(server.request("GET", "/api/v1/growth?limit=1000")[1])  # not counted below
    pings = []  # (when it was answered, seconds it took)
    stop = threading.Event()

    def ping_until_stopped():
        ping = server.connection()
        while not stop.is_set():
            started = time.monotonic()
            ping.request("GET", "/ping")
            assert ping.getresponse().read() == b"pong"
            pings.append((time.monotonic(), time.monotonic() - started))

    pinger = threading.Thread(target=ping_until_stopped)
    pinger.start()
    flood = time.monotonic()
    readers = [server.socket() for _ in range(SLOW_READERS)]
    for sock in readers:
        sock.sendall(LIST_PAGE * PIPELINED)
    built = settled(lambda: pages_built(server)) - 1  # less the page measured above
    quiet = time.monotonic()
    wait_for(lambda: time.monotonic() - quiet > HELD_SECONDS, interval=0.1)
    stop.set()
    pinger.join()
    during = sorted(seconds for when, seconds in pings if when < quiet)
    held = sorted(seconds for when, seconds in pings if when >= quiet)
    print(f"\n{SLOW_READERS} readers pipelining {PIPELINED} pages of {page_bytes} bytes, reading none: "
          f"{built} pages built ({built / SLOW_READERS:.1f} per connection, "
          f"{built * page_bytes / SLOW_READERS / 2**20:.2f} MiB) in {quiet - flood - 1:.1f} s; /ping p50 while "
          f"they were built {percentile(during, 50) * 1000:.2f} ms ({len(during)} pings), then with the readers "
          f"holding their connections {percentile(held, 50) * 1000:.2f} ms ({len(held)} pings)")
    assert built / SLOW_READERS <= 16
    assert percentile(held, 50) < 0.05


def percentile(ordered, percent):
    return ordered[min(len(ordered) - 1, len(ordered) * percent // 100)] if ordered else float("nan")
