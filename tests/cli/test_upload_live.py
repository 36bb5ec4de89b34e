"""What tests/cli/test_upload.py tests, where it takes a process: a server, redis-server or a command line; the
names these tests share with those in process come from tests/cli/test_upload.py."""

import csv
import json
import os
import socket
import subprocess
import sys

import pytest

from growth_gevent.testing import LiveServer
from growth_gevent.upload import PLAIN_STEPS
from scripts.benchmark import uploads
from scripts.generate_data import generate
from tests.cli.test_upload import RECORDS
from tests.helpers.support import ROOT, SAMPLE

TOKEN = "upload-token-0123456789abcdef"


def test_a_load_is_applied_before_the_upload_reports_it(server, tmp_path):
    records = generate(RECORDS, seed=7)
    bulk_file = tmp_path / "bulk.json"
    bulk_file.write_text(json.dumps(records))

    result = run_upload(bulk_file, "--url", url_of(server))

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
    result = run_upload(SAMPLE, "--url", url_of(server) + "/")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("loaded 9 records ")


def test_an_invalid_record_is_the_servers_422_message_and_nothing_is_stored(server, tmp_path):
    records = generate(10, seed=7)
    records[3]["Year"] = "2005"
    bulk_file = tmp_path / "bad-year.json"
    bulk_file.write_text(json.dumps(records))

    result = run_upload(bulk_file, "--url", url_of(server))

    assert_refused_by_the_server(result, "422", "record 3: Year must be an integer")
    assert result.stdout == ""
    assert size_of(server) == 0


def test_a_file_that_is_not_json_is_the_servers_400_message(server, tmp_path):
    bulk_file = tmp_path / "not.json"
    bulk_file.write_text("Country,Indicator,Value,Year\nBRZ,NGDP_R,183.26,2002\n")

    result = run_upload(bulk_file, "--url", url_of(server))

    assert_refused_by_the_server(result, "400", "request body is not valid JSON")
    assert size_of(server) == 0


@pytest.mark.parametrize("server", [{"GROWTH_MAX_BODY_BYTES": "100000"}], indirect=True)
def test_a_file_over_the_body_limit_is_the_servers_413_message(server, tmp_path):
    bulk_file = tmp_path / "big.json"
    # Megabytes more than socket buffers hold: the server answers 413 and closes while the upload is
    # still sending, and the upload must still read that answer.
    bulk_file.write_text(json.dumps(generate(42450, seed=7) * 4))

    result = run_upload(bulk_file, "--url", url_of(server))

    assert_refused_by_the_server(result, "413", "request body is larger than 100000 bytes")
    assert size_of(server) == 0


@pytest.mark.parametrize("server", [{"GROWTH_API_TOKENS": TOKEN}], indirect=True)
def test_the_token_comes_from_the_environment(server):
    result = run_upload(SAMPLE, "--url", url_of(server), GROWTH_API_TOKEN=TOKEN)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("loaded 9 records ")


@pytest.mark.parametrize("server", [{"GROWTH_API_TOKENS": TOKEN}], indirect=True)
@pytest.mark.parametrize("token, message", [("", "this write needs a token"),
                                            ("not-the-token-at-all", "the bearer token is not valid")])
def test_a_missing_or_wrong_token_is_the_servers_401_message_and_how_to_give_one(server, token, message):
    result = run_upload(SAMPLE, "--url", url_of(server), GROWTH_API_TOKEN=token)
    assert_refused_by_the_server(result, "401", message)
    assert "(give the token with --token or GROWTH_API_TOKEN)" in result.stderr
    assert size_of(server) == 0


@pytest.mark.parametrize("server", [{"GROWTH_API_TOKENS": TOKEN}], indirect=True)
def test_the_token_flag_is_sent(server):
    result = run_upload(SAMPLE, "--url", url_of(server), "--token", TOKEN, GROWTH_API_TOKEN="")
    assert result.returncode == 0, result.stderr
    assert size_of(server) == 9


@pytest.mark.parametrize("name, arguments", [("bulk.csv", []), ("bulk.txt", ["--format", "csv"])])
def test_a_csv_file_is_loaded_as_csv(server, tmp_path, name, arguments):
    records = generate(RECORDS, seed=11)
    bulk_file = tmp_path / name
    with bulk_file.open("w", newline="") as out:
        writer = csv.DictWriter(out, ["Country", "Indicator", "Value", "Year"])
        writer.writeheader()
        writer.writerows(records)

    result = run_upload(bulk_file, "--url", url_of(server), *arguments)

    assert result.returncode == 0, result.stderr
    assert result.stdout == f"loaded {RECORDS} records (status complete, size {RECORDS})\n"
    last = records[-1]
    status, body = server.request_json("GET", f"/api/v1/growth/{last['Country']}/{last['Indicator']}/{last['Year']}")
    assert (status, body["Value"]) == (200, last["Value"])


def test_several_files_are_loaded_at_once_each_followed_until_applied(server, tmp_path):
    paths = []
    for index in range(6):  # more than the default concurrency of 4; a CSV among them
        records = generate(1000, seed=100 + index)
        path = tmp_path / f"part-{index}.json"
        path.write_text(json.dumps(records))
        paths.append(path)
    csv_path = paths[-1].with_suffix(".csv")
    csv_path.write_text("Country,Indicator,Value,Year\r\n" + "".join(
        f"CSV,ONLY,{year / 4},{year}\r\n" for year in range(1000)))
    paths[-1] = csv_path
    expected = {(r["Country"], r["Indicator"], r["Year"]) for path in paths[:-1] for r in json.loads(path.read_text())}

    result = run_upload(*paths, "--url", url_of(server))

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:-1] == [f"{path}: loaded 1000 records" for path in paths]
    size = len(expected) + 1000
    assert lines[-1] == f"loaded 6000 records from 6 files (status complete, size {size})"
    assert size_of(server) == size
    for path in paths:  # each file's progress, labelled with its name, ends full
        assert f"{path}: [{'#' * 30}] 1000/1000 records" in result.stderr.splitlines()


def test_of_several_files_the_refused_one_is_named_and_the_others_loaded(server, tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(generate(10, seed=7)))
    bad.write_text('[{"Country": "A", "Indicator": "B", "Value": 1, "Year": "2005"}]')

    result = run_upload(good, bad, "--url", url_of(server))

    assert result.returncode == 3
    assert f"error: {bad}: POST {url_of(server)}/api/v1/growth answered 422" in result.stderr
    assert result.stdout.splitlines() == [f"{good}: loaded 10 records",
                                          "loaded 10 records from 1 files (status complete, size 10)"]


def test_an_unreachable_service_is_a_clear_message():
    url = f"http://127.0.0.1:{closed_port()}"

    result = run_upload(SAMPLE, "--url", url)

    assert result.returncode == 1
    assert f"cannot reach the service at {url}" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_a_missing_file_exits_2_before_any_request(tmp_path):
    missing = tmp_path / "missing.json"

    # Against an unreachable URL: trying to upload would exit 1, not 2.
    result = run_upload(missing, "--url", f"http://127.0.0.1:{closed_port()}")

    assert result.returncode == 2
    assert f"cannot read {missing}" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_url_that_is_not_http_is_a_usage_error():
    result = run_upload(SAMPLE, "--url", "localhost:8080")
    assert result.returncode == 2
    assert "not an http:// or https:// URL" in result.stderr


@pytest.fixture
def server(request, deployment):
    # One record per chunk: the load takes thousands of hub turns to apply, so an upload that did not
    # wait for it to be applied would print and exit before the store had every record.
    live = LiveServer(GROWTH_BULK_CHUNK_RECORDS="1", **deployment, **getattr(request, "param", {})).start()
    yield live
    live.stop()


def run_upload(*arguments, **env):
    """``load`` with ``arguments`` (files and flags), in a process of its own."""
    return subprocess.run([sys.executable, "-m", "growth_gevent", "load", *map(str, arguments)],
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


@pytest.mark.serial  # the bench's servers and uploads: seconds of both CPUs
def test_the_bench_of_uploads_times_every_concurrency_on_both_deployments(monkeypatch):
    monkeypatch.setattr(uploads, "FILE_RECORDS", 500)
    result = uploads.measure_uploads(runs=1, count=3)
    assert list(result) == [uploads.MEMORY, uploads.REDIS_TWO_WORKERS]
    for by_concurrency in result.values():
        assert list(by_concurrency) == list(uploads.CONCURRENCIES)
        assert by_concurrency[1]["speedup"] == 1.0
        assert all(figures["seconds"] > 0 and figures["client_cpu_seconds"] > 0 for figures in by_concurrency.values())
        # CPU time comes in clock ticks (10 ms): a row of small files may take less than one.
        assert sum(figures["server_cpu_seconds"] for figures in by_concurrency.values()) > 0
    assert sum(figures["redis_cpu_seconds"] for figures in result[uploads.REDIS_TWO_WORKERS].values()) > 0
    lines = uploads.upload_lines(result, 3)
    assert lines[0].startswith("growth-gevent load of 3 files")
    assert len(lines) == 1 + 2 * len(uploads.CONCURRENCIES)
