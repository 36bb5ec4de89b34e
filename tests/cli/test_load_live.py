"""What tests/cli/test_load.py tests, where it takes a process: a server, redis-server or a command line; the
names these tests share with those in process come from tests/cli/test_load.py."""

import csv
import gzip
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from growth_gevent.cli.load import PARTIAL
from growth_gevent.cli.progress import PLAIN_STEPS
from scripts.benchmark import uploads
from scripts.generate_data import generate
from tests.helpers.cli import RECORDS, run_upload, size_of, url_of
from tests.helpers.support import SAMPLE

TOKEN = "upload-token-0123456789abcdef"
# Enough records for a file of several parts under a 50-100 kB body limit.
PARTED_RECORDS = 5000


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
def test_a_file_over_the_servers_body_limit_is_sent_in_parts_under_the_limit_its_413_names(server, tmp_path):
    records = generate(PARTED_RECORDS, seed=7)
    bulk_file = tmp_path / "big.json"
    # Indented, as the challenge's files are: the parts keep each record's bytes as in the file.
    bulk_file.write_text(json.dumps(records, indent=4))
    assert bulk_file.stat().st_size > 4 * 100000

    result = run_upload(bulk_file, "--url", url_of(server))

    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"loaded {PARTED_RECORDS} records (status complete, size {PARTED_RECORDS}; "
                             "/post/status counts the last part only)\n")
    assert size_of(server) == PARTED_RECORDS
    # The whole file's 413, then one job per part: the server took no body over its limit.
    assert server.request_json("GET", "/api/v1/growth/post/status")[1]["jobs accepted"] > 4
    assert_stored(server, records[-1])


@pytest.mark.parametrize("server", [{"GROWTH_BULK_MAX_RECORDS": "1000"}], indirect=True)
def test_a_file_over_the_servers_records_per_load_is_sent_in_parts_of_that_many(server, tmp_path):
    bulk_file = tmp_path / "many.csv"
    write_records(bulk_file, generate(PARTED_RECORDS, seed=14))

    result = run_upload(bulk_file, "--url", url_of(server))

    assert result.returncode == 0, result.stderr
    assert size_of(server) == PARTED_RECORDS
    assert server.request_json("GET", "/api/v1/growth/post/status")[1]["jobs accepted"] == PARTED_RECORDS // 1000


def test_max_body_sets_the_size_of_the_parts(server, tmp_path):
    records = generate(PARTED_RECORDS, seed=8)
    bulk_file = tmp_path / "big.json"
    bulk_file.write_text(json.dumps(records))

    result = run_upload(bulk_file, "--url", url_of(server), "--max-body", "50000")

    assert result.returncode == 0, result.stderr
    jobs = server.request_json("GET", "/api/v1/growth/post/status")[1]["jobs accepted"]
    assert jobs == -(-bulk_file.stat().st_size // 50000) or jobs == -(-bulk_file.stat().st_size // 50000) + 1
    assert size_of(server) == PARTED_RECORDS


@pytest.mark.parametrize("server", [{"GROWTH_MAX_BODY_BYTES": "50000"}], indirect=True)
@pytest.mark.parametrize("name", ["big.json", "big.csv", "big.ndjson"])
def test_a_bad_record_anywhere_in_a_file_sent_in_parts_sends_nothing_and_is_named_in_the_file(server, tmp_path,
                                                                                             name):
    records = generate(PARTED_RECORDS, seed=9)
    records[4000]["Year"] = "y2005"  # not an integer in any format
    bulk_file = tmp_path / name
    write_records(bulk_file, records)

    result = run_upload(bulk_file, "--url", url_of(server))

    place = {"big.json": "record 4000", "big.csv": "row 4002", "big.ndjson": "line 4001"}[name]
    assert result.returncode == 1
    assert f"{place}: Year must be an integer (nothing was sent)" in result.stderr, result.stderr
    assert size_of(server) == 0


@pytest.mark.parametrize("server", [{"GROWTH_MAX_BODY_BYTES": "50000", "GROWTH_MAX_RECORDS": "3000"}], indirect=True)
def test_a_part_the_server_refuses_for_its_state_says_which_records_the_parts_before_it_loaded(server, tmp_path):
    """Not all-or-nothing: the store holds 3,000 records; the parts before the one that would pass it stay."""
    bulk_file = tmp_path / "big.json"
    bulk_file.write_text(json.dumps(generate(PARTED_RECORDS, seed=10)))

    result = run_upload(bulk_file, "--url", url_of(server))

    assert result.returncode == PARTIAL
    stored = size_of(server)
    assert 0 < stored <= 3000
    assert "507" in result.stderr
    assert (f"the {stored} records before record {stored} were loaded. A bulk load replaces records by key: "
            "loading the file again is safe") in result.stderr, result.stderr


def test_an_ndjson_export_loads_from_its_file_or_stdin_and_a_csv_from_stdin(server, tmp_path):
    records = generate(1000, seed=12)
    ndjson = tmp_path / "export.ndjson"
    write_records(ndjson, records)
    csv_text = "country,INDICATOR,Value,year\n" + "".join(f"LOWER,HEADER,{year / 4},{year}\n" for year in range(50))

    from_file = run_upload(ndjson, "--url", url_of(server))
    from_stdin = run_upload("-", "--url", url_of(server), input=ndjson.read_text())
    csv_from_stdin = run_upload("-", "--url", url_of(server), input=csv_text)

    for result, count in ((from_file, 1000), (from_stdin, 1000), (csv_from_stdin, 50)):
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"loaded {count} records ")
    assert size_of(server) == 1050
    assert_stored(server, records[-1])
    assert server.request_json("GET", "/api/v1/growth/LOWER/HEADER/49")[1]["Value"] == 12.25


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
                                          "loaded 10 records from 1 file (status complete, size 10)"]


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


class GzipService(BaseHTTPRequestHandler):
    """A stand-in for a server that takes gzipped bulk bodies: it keeps each POST's headers and inflated body,
    and says every job is applied."""

    posts: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.posts.append((dict(self.headers), body))
        self._json(202, {"msg": "In progress"}, Location=f"/api/v1/growth/post/status/{len(self.posts)}")

    def do_GET(self):
        jobs = len(self.posts)
        self._json(200, {"size": 9} if self.path.endswith("/size") else
                   {"msg": "complete", "count": 9, "total": 9, "jobs accepted": jobs, "jobs applied": jobs})

    def _json(self, status, document, **headers):
        data = json.dumps(document).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", "Content-Length": len(data), **headers}.items():
            self.send_header(name, str(value))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_gzip_sends_each_body_gzipped_with_its_content_encoding(tmp_path):
    bulk_file = tmp_path / "big.json"
    records = generate(PARTED_RECORDS, seed=13)
    bulk_file.write_text(json.dumps(records))
    stub = ThreadingHTTPServer(("127.0.0.1", 0), GzipService)
    GzipService.posts = []
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    try:
        result = run_upload(bulk_file, "--url", f"http://127.0.0.1:{stub.server_port}", "--gzip",
                            "--max-body", "100000")
    finally:
        stub.shutdown()
        stub.server_close()
    assert result.returncode == 0, result.stderr
    assert len(GzipService.posts) > 1
    assert all(headers["Content-Encoding"] == "gzip" and len(body) <= 100000 for headers, body in GzipService.posts)
    assert [record for _, body in GzipService.posts for record in json.loads(body)] == records


def test_gzip_loads_into_the_server(server):
    result = run_upload(SAMPLE, "--url", url_of(server), "--gzip")
    assert "try without --gzip" not in result.stderr
    assert result.returncode == 0, result.stderr
    assert size_of(server) == 9


def write_records(path, records):
    """``records`` in the format the name of ``path`` says: .csv, .ndjson, else a JSON array."""
    if path.suffix == ".csv":
        with path.open("w", newline="") as out:
            writer = csv.DictWriter(out, ["Country", "Indicator", "Value", "Year"])
            writer.writeheader()
            writer.writerows(records)
    elif path.suffix == ".ndjson":
        path.write_text("".join(json.dumps(record) + "\n" for record in records))
    else:
        path.write_text(json.dumps(records))


def assert_stored(server, record):
    status, body = server.request_json("GET", f"/api/v1/growth/{record['Country']}/{record['Indicator']}/"
                                              f"{record['Year']}")
    assert (status, body["Value"]) == (200, record["Value"])


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
