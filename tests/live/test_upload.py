"""What tests/test_upload.py tests, where it takes a process: a server, redis-server or a command line; the
names these tests share with those in process come from tests/test_upload.py."""

import json
import os
import socket
import subprocess
import sys

import pytest

from growth_gevent.testing import LiveServer
from growth_gevent.upload import PLAIN_STEPS
from scripts.generate_data import generate
from tests.test_upload import RECORDS

from support import ROOT, SAMPLE

TOKEN = "upload-token-0123456789abcdef"


def test_a_load_is_applied_before_the_upload_reports_it(server, tmp_path):
    records = generate(RECORDS, seed=7)
    bulk_file = tmp_path / "bulk.json"
    bulk_file.write_text(json.dumps(records))

    result = run_upload(bulk_file, url_of(server))

    assert result.returncode == 0, result.stderr
    assert result.stdout == f"loaded {RECORDS} records (status complete, size {RECORDS})\n"
    assert size_of(server) == RECORDS
    last = records[-1]
    path = f"/api/v1/growth/{last['Country']}/{last['Indicator']}/{last['Year']}"
    status, body = server.request_json("GET", path)
    assert (status, body["Value"]) == (200, last["Value"])
    progress_lines = result.stderr.splitlines()
    assert progress_lines[-1].endswith(f"] {RECORDS}/{RECORDS} records")
    assert len(progress_lines) <= PLAIN_STEPS + 1


def test_a_trailing_slash_in_the_url_is_accepted(server):
    result = run_upload(SAMPLE, url_of(server) + "/")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("loaded 9 records ")


def test_an_invalid_record_is_the_servers_422_message_and_nothing_is_stored(server, tmp_path):
    records = generate(10, seed=7)
    records[3]["Year"] = "2005"
    bulk_file = tmp_path / "bad-year.json"
    bulk_file.write_text(json.dumps(records))

    result = run_upload(bulk_file, url_of(server))

    assert_refused_by_the_server(result, "422", "record 3: Year must be an integer")
    assert result.stdout == ""
    assert size_of(server) == 0


def test_a_file_that_is_not_json_is_the_servers_400_message(server, tmp_path):
    bulk_file = tmp_path / "not.json"
    bulk_file.write_text("Country,Indicator,Value,Year\nBRZ,NGDP_R,183.26,2002\n")

    result = run_upload(bulk_file, url_of(server))

    assert_refused_by_the_server(result, "400", "request body is not valid JSON")
    assert size_of(server) == 0


@pytest.mark.parametrize("server", [{"GROWTH_MAX_BODY_BYTES": "100000"}], indirect=True)
def test_a_file_over_the_body_limit_is_the_servers_413_message(server, tmp_path):
    bulk_file = tmp_path / "big.json"
    # Megabytes more than socket buffers hold: the server answers 413 and closes while the upload is
    # still sending, and the upload must still read that answer.
    bulk_file.write_text(json.dumps(generate(42450, seed=7) * 4))

    result = run_upload(bulk_file, url_of(server))

    assert_refused_by_the_server(result, "413", "request body is larger than 100000 bytes")
    assert size_of(server) == 0


@pytest.mark.parametrize("server", [{"GROWTH_API_TOKENS": TOKEN}], indirect=True)
def test_the_token_comes_from_the_environment(server):
    result = run_upload(SAMPLE, url_of(server), GROWTH_API_TOKEN=TOKEN)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("loaded 9 records ")


@pytest.mark.parametrize("server", [{"GROWTH_API_TOKENS": TOKEN}], indirect=True)
@pytest.mark.parametrize("token, message", [("", "this write needs a token"),
                                            ("not-the-token-at-all", "the bearer token is not valid")])
def test_a_missing_or_wrong_token_is_the_servers_401_message(server, token, message):
    result = run_upload(SAMPLE, url_of(server), GROWTH_API_TOKEN=token)
    assert_refused_by_the_server(result, "401", message)
    assert size_of(server) == 0


def test_an_unreachable_service_is_a_clear_message():
    url = f"http://127.0.0.1:{closed_port()}"

    result = run_upload(SAMPLE, url)

    assert result.returncode == 1
    assert f"cannot reach the service at {url}" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_a_missing_file_exits_2_before_any_request(tmp_path):
    missing = tmp_path / "missing.json"

    # Against an unreachable URL: trying to upload would exit 1, not 2.
    result = run_upload(missing, f"http://127.0.0.1:{closed_port()}")

    assert result.returncode == 2
    assert f"cannot read {missing}" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_url_that_is_not_http_is_a_usage_error():
    result = run_upload(SAMPLE, "localhost:8080")
    assert result.returncode == 2
    assert "not an http:// or https:// URL" in result.stderr


@pytest.fixture
def server(request, deployment):
    # One record per chunk: the load takes thousands of hub turns to apply, so an upload that did not
    # wait for it to be applied would print and exit before the store had every record.
    live = LiveServer(GROWTH_BULK_CHUNK_RECORDS="1", **deployment, **getattr(request, "param", {})).start()
    yield live
    live.stop()


def run_upload(path, url, **env):
    return subprocess.run([sys.executable, "-m", "growth_gevent", "load", str(path), "--url", url],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, env={**os.environ, **env},
                          check=False)


def url_of(server):
    return f"http://127.0.0.1:{server.port}"


def size_of(server):
    return server.request_json("GET", "/api/v1/growth/size")[1]["size"]


def closed_port():
    """A loopback port that nothing listens on: bound, then released."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def assert_refused_by_the_server(result, status, message):
    """Exit 1 with the server's status and message, and no traceback."""
    assert result.returncode == 1
    assert status in result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
