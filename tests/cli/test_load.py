"""``python -m growth_gevent load FILE``: a real upload process against a real server process."""

import io
import json
import os
import pathlib
from unittest import mock

import gevent
import pytest

from growth_gevent.cli import client, parse_command_line
from growth_gevent.cli import load as upload
from growth_gevent.cli.progress import PLAIN_STEPS, ProgressBar
from growth_gevent.config import Config
from tests.helpers.support import SAMPLE


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_the_bar_is_redrawn_in_place():
    terminal = Terminal()
    bar = ProgressBar(terminal, 200)
    for done in range(0, 201, 50):
        bar.show(done)
    bar.end()
    assert terminal.getvalue() == "".join(
        f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/200 records"
        for filled, done in ((0, 0), (7, 50), (15, 100), (22, 150), (30, 200))) + "\n"


def test_without_a_terminal_the_bar_is_a_few_lines_however_often_it_is_shown():
    stream = io.StringIO()
    bar = ProgressBar(stream, 42450)
    for done in range(42451):
        bar.show(done)
    bar.end()
    lines = stream.getvalue().splitlines()
    assert len(lines) == PLAIN_STEPS + 1
    assert lines[0] == f"[{'.' * 30}] 0/42450 records"
    assert lines[-1] == f"[{'#' * 30}] 42450/42450 records"



def test_without_a_terminal_the_last_line_says_where_the_bar_ended():
    """A file loaded in part ends between two quarters: its last line is what was loaded, not the quarter's."""
    stream = io.StringIO()
    bar = ProgressBar(stream, 3000)
    for done in (0, 751, 1000):
        bar.show(done)
    bar.end()
    assert stream.getvalue().splitlines() == [f"[{'.' * 30}] 0/3000 records", f"[{'#' * 7}{'.' * 23}] 751/3000 records",
                                              f"[{'#' * 10}{'.' * 20}] 1000/3000 records"]

# Several files, the format and the token, with the requests faked: which files went, how many at once.

class FakeService:
    """What ``upload.request_json`` would get from a server that takes every POST; the POSTs whose body holds
    ``refuse`` are refused with a 422, as the server refuses a bad record."""

    def __init__(self, refuse=b"\x00"):
        self.refuse = refuse
        self.posts = []  # (body, headers) of each POST, in the order they were sent
        self.in_flight = self.most_in_flight = 0

    def request(self, method, base_url, path, body=None, headers=()):
        if method == "POST":
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            gevent.sleep(0)  # the body on its way: the other uploads started go on meanwhile, to their POST
            self.in_flight -= 1
            if self.refuse in body:
                raise client.Refused(f"POST {base_url}{path} answered 422 Unprocessable Entity: record 0", 422,
                                     "record 0")
            self.posts.append((body, dict(headers)))
            answer = client.Answer(msg="In progress")
            answer.location = f"{upload.STATUS_PATH}/{len(self.posts)}"
            return answer
        if path == upload.SIZE_PATH:
            return {"size": 7}
        jobs = len(self.posts)
        return {"msg": "complete", "jobs accepted": jobs, "jobs applied": jobs, "count": 1, "total": 1}


@pytest.fixture
def service(monkeypatch):
    fake = FakeService()
    monkeypatch.setattr(upload, "request_json", fake.request)
    return fake


def bulk_files(folder, count, name="bulk-{}.json"):
    paths = []
    for index in range(count):
        path = folder / name.format(index)
        path.write_text(json.dumps([{"Country": "A", "Indicator": "B", "Value": index, "Year": 2000}]))
        paths.append(str(path))
    return paths


def run_load(*argv, environ=None):
    args = parse_command_line(["load", *argv, "--url", "http://h:1"])
    with mock.patch.dict(os.environ, environ or {}, clear=environ is not None):
        return upload.run(upload.with_settings(args, Config()))


def test_files_upload_concurrently_at_most_concurrency_at_once(service, tmp_path, capsys):
    paths = bulk_files(tmp_path, 10)
    assert run_load(*paths, "--concurrency", "3") == 0
    assert (len(service.posts), service.most_in_flight) == (10, 3)
    out = capsys.readouterr().out.splitlines()
    assert sorted(out[:-1]) == sorted(f"{path}: loaded 1 record" for path in paths)
    assert out[-1] == "loaded 10 records from 10 files (status complete, size 7)"


def test_the_default_concurrency_is_4(service, tmp_path):
    assert run_load(*bulk_files(tmp_path, 6)) == 0
    assert service.most_in_flight == 4


@pytest.mark.parametrize("concurrency", ["0", "-1", "many"])
def test_a_concurrency_that_is_not_a_positive_integer_is_a_usage_error(concurrency, capsys):
    with pytest.raises(SystemExit) as exited:
        parse_command_line(["load", "a.json", "--concurrency", concurrency])
    assert exited.value.code == 2
    assert "--concurrency: not a positive integer" in capsys.readouterr().err


@pytest.mark.parametrize("refused, code", [([], 0), ([1, 3], 3), ([0, 1, 2, 3], 1)])
def test_the_exit_code_says_whether_every_file_some_or_none_was_loaded_and_stderr_which_failed(
        service, tmp_path, capsys, refused, code):
    paths = bulk_files(tmp_path, 4)
    service.refuse = b'"Value": 9'
    for index in refused:
        pathlib.Path(paths[index]).write_text('[{"Country": "A", "Indicator": "B", "Value": 9, "Year": 1}]')
    assert run_load(*paths) == code
    captured = capsys.readouterr()
    failed = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert failed == [f"error: {paths[index]}: POST http://h:1/api/v1/growth answered 422 Unprocessable Entity: "
                      "record 0" for index in refused]
    loaded = [line.split(":")[0] for line in captured.out.splitlines() if ": loaded" in line]
    assert loaded == [path for index, path in enumerate(paths) if index not in refused]


def test_an_unreadable_file_among_several_exits_2_before_any_request(service, tmp_path, capsys):
    paths = bulk_files(tmp_path, 2)
    assert run_load(paths[0], str(tmp_path / "missing.json"), paths[1]) == 2
    assert service.posts == []
    assert f"cannot read {tmp_path / 'missing.json'}" in capsys.readouterr().err


@pytest.mark.parametrize("name, format_flag, content_type", [
    ("bulk.json", [], "application/json"), ("bulk.csv", [], "text/csv"), ("BULK.CSV", [], "text/csv"),
    ("bulk.txt", [], "application/json"), ("bulk.txt", ["--format", "csv"], "text/csv"),
    ("bulk.csv", ["--format", "json"], "application/json")])
def test_a_file_is_sent_as_csv_by_its_extension_or_as_format_says(service, tmp_path, name, format_flag, content_type):
    path = tmp_path / name
    path.write_text("Country,Indicator,Value,Year\nA,B,1,2000\n" if content_type == "text/csv" else "[]")
    assert run_load(str(path), *format_flag) == 0
    assert service.posts[0][1]["Content-Type"] == content_type


@pytest.mark.parametrize("flag, environ, sent", [
    ([], {}, None), ([], {"GROWTH_API_TOKEN": "from-the-environment"}, "Bearer from-the-environment"),
    (["--token", "from-the-flag"], {"GROWTH_API_TOKEN": "from-the-environment"}, "Bearer from-the-flag")])
def test_the_token_is_the_flags_else_the_environments(service, flag, environ, sent):
    assert run_load(str(SAMPLE), *flag, environ=environ) == 0
    assert service.posts[0][1].get("Authorization") == sent


@pytest.mark.parametrize("body, file_format, records", [
    (b'[{"a": 1}, {"a": 2}]', "json", 2), (b"[]", "json", 0),
    (b"Country,Indicator,Value,Year\r\nA,B,1,2000\r\n\r\nC,D,2,2001", "csv", 2),
    (b'\xef\xbb\xbfCountry,Indicator,Value,Year\rA,"B\nC",1,2000\r', "csv", 1),
    (b"Country,Indicator,Value,Year\n", "csv", 0)])
def test_records_are_counted_in_the_file_as_the_server_reads_it(body, file_format, records):
    assert upload.count_records(body, file_format) == records


def test_each_file_is_read_when_its_upload_starts_so_only_concurrency_files_are_held(service, tmp_path, capsys,
                                                                                     monkeypatch):
    first, second = bulk_files(tmp_path, 2)

    def post_then_remove_the_second(method, base_url, path, body=None, headers=()):
        if method == "POST" and os.path.exists(second):
            os.remove(second)  # after the check that every file can be read, before its upload reads it
        return service.request(method, base_url, path, body, headers)

    monkeypatch.setattr(upload, "request_json", post_then_remove_the_second)
    assert run_load(first, second, "--concurrency", "1") == 3
    assert f"error: {second}: cannot read {second}: No such file or directory" in capsys.readouterr().err


def test_stdin_can_be_given_once(service, capsys):
    assert run_load("-", "-") == 2
    assert service.posts == []
    assert "error: - (standard input) can be given once" in capsys.readouterr().err
