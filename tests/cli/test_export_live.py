"""``growth-gevent export`` as a user runs it: a process against a live server, its stdout a file or a pipe,
its stderr a pipe or a terminal (a pseudo-terminal)."""

import json
import os
import pty
import select
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import pytest

from growth_gevent.testing import LiveServer
from scripts.generate_data import generate
from tests.helpers.support import ROOT

RECORDS = 3000
# How long the test waits for what the command must write: a loaded machine's generous bound, not a timing.
WAIT_SECONDS = 60


@pytest.fixture(scope="module")
def server():
    live = LiveServer().start()
    status, _ = live.request("POST", "/api/v1/growth", json.dumps(generate(RECORDS, seed=21)).encode(),
                             {"Content-Type": "application/json"})
    assert status == 202
    live.wait_until_complete()
    yield live
    live.stop()


def export(server_or_url, *arguments, **options):
    url = server_or_url if isinstance(server_or_url, str) else f"http://127.0.0.1:{server_or_url.port}"
    return subprocess.run([sys.executable, "-m", "growth_gevent", "export", "--url", url, *arguments], cwd=ROOT,
                          capture_output=True, timeout=120, check=False, **options)


def served(server, query):
    status, body = server.request("GET", f"/api/v1/growth/export?{query}")
    assert status == 200
    return body


@pytest.mark.parametrize("arguments, query", [
    ([], "format=json"), (["--format", "csv"], "format=csv"), (["--format", "ndjson"], "format=ndjson"),
    (["--format", "csv", "--country", "brz", "--from", "2005", "--to", "2010"],
     "format=csv&country=BRZ&from=2005&to=2010"),
    (["--indicator", "ngdp_r", "--year", "2010"], "indicator=NGDP_R&year=2010"),
])
def test_the_file_is_what_the_export_url_answers_and_stderr_says_nothing(server, tmp_path, arguments, query):
    output = tmp_path / "export"
    with output.open("wb") as out:
        result = subprocess.run([sys.executable, "-m", "growth_gevent", "export", "--url",
                                 f"http://127.0.0.1:{server.port}", *arguments], cwd=ROOT, stdout=out,
                                stderr=subprocess.PIPE, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stderr == b""
    assert output.read_bytes() == served(server, query)


def test_an_export_loads_back_into_another_server_byte_for_byte(server, tmp_path):
    exported = export(server, "--format", "ndjson").stdout
    second = LiveServer().start()
    try:
        loaded = subprocess.run([sys.executable, "-m", "growth_gevent", "load", "-", "--url",
                                 f"http://127.0.0.1:{second.port}"], cwd=ROOT, input=exported, capture_output=True,
                                timeout=120, check=False)
        assert loaded.returncode == 0, loaded.stderr
        assert served(second, "format=ndjson") == exported
    finally:
        second.stop()


def test_a_filter_the_server_refuses_is_its_message_and_exit_1(server):
    result = export(server, "--year", "twenty")
    assert result.returncode == 1
    assert b"answered 400 Bad Request: year must be an integer" in result.stderr, result.stderr
    assert result.stdout == b""


def test_a_name_a_spreadsheet_would_evaluate_after_a_space_is_escaped(server):
    name = " =1+1"
    status, _ = server.request("PUT", f"/api/v1/growth/{quote(name, safe='')}/X/2000", b'{"value": 1}',
                               {"Content-Type": "application/json"})
    assert status == 201
    try:
        result = export(server, "--format", "csv", "--indicator", "x")
        assert result.stdout == b"Country,Indicator,Value,Year\r\n\"' =1+1\",X,1,2000\r\n"
    finally:
        server.request("DELETE", f"/api/v1/growth/{quote(name, safe='')}/X/2000")


def test_on_a_terminal_stderr_shows_a_progress_bar_to_the_total(server, tmp_path):
    controller, terminal = pty.openpty()
    try:
        with (tmp_path / "out.csv").open("wb") as out:
            process = subprocess.Popen([sys.executable, "-m", "growth_gevent", "export", "--format", "csv", "--url",
                                        f"http://127.0.0.1:{server.port}"], cwd=ROOT, stdout=out, stderr=terminal)
            os.close(terminal)
            shown = read_until_closed(controller)
            assert process.wait(timeout=WAIT_SECONDS) == 0
    finally:
        os.close(controller)
    assert shown.endswith(f"[{'#' * 30}] {RECORDS}/{RECORDS} records\r\n".encode()), shown[-200:]


def read_until_closed(descriptor):
    """What a pseudo-terminal's other end writes until it closes."""
    shown = b""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if select.select([descriptor], [], [], 1)[0]:
            try:
                block = os.read(descriptor, 4096)
            except OSError:  # the other end closed (EIO on Linux)
                break
            if not block:
                break
            shown += block
    return shown


class HeldExport(BaseHTTPRequestHandler):
    """An export whose first records are sent at once and whose end waits for ``release``: a command that held
    the whole export before writing would write nothing while it waits."""

    release = threading.Event()

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._chunk(b'{"Country":"A","Indicator":"B","Value":1,"Year":2000}\n')
        self.release.wait(WAIT_SECONDS)
        self._chunk(b'{"Country":"A","Indicator":"B","Value":2,"Year":2001}\n')
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def log_message(self, *args):
        pass


def test_records_are_written_as_they_arrive_not_once_the_export_ends():
    stub = ThreadingHTTPServer(("127.0.0.1", 0), HeldExport)
    HeldExport.release.clear()
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    try:
        process = subprocess.Popen([sys.executable, "-m", "growth_gevent", "export", "--format", "ndjson", "--url",
                                    f"http://127.0.0.1:{stub.server_port}"], cwd=ROOT, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
        ready = select.select([process.stdout], [], [], WAIT_SECONDS)[0]
        first = process.stdout.readline() if ready else b""
        HeldExport.release.set()
        rest, _ = process.communicate(timeout=WAIT_SECONDS)
    finally:
        HeldExport.release.set()
        stub.shutdown()
        stub.server_close()
    assert first == b'{"Country":"A","Indicator":"B","Value":1,"Year":2000}\n'
    assert rest == b'{"Country":"A","Indicator":"B","Value":2,"Year":2001}\n'
    assert process.returncode == 0


def test_a_stream_cut_off_is_an_error_not_a_short_file():
    class CutOff(HeldExport):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._chunk(b'{"Country":"A","Indicator":"B","Value":1,"Year":2000}\n')
            self.close_connection = True  # no last chunk: the server went away

    stub = ThreadingHTTPServer(("127.0.0.1", 0), CutOff)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    try:
        result = export(f"http://127.0.0.1:{stub.server_port}", "--format", "ndjson")
    finally:
        stub.shutdown()
        stub.server_close()
    assert result.returncode == 1
    assert b"cut off after 54 bytes: the connection closed before its end" in result.stderr, result.stderr
    assert b"Traceback" not in result.stderr
