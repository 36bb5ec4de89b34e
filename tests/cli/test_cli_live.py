"""What tests/cli/test_cli.py tests, where it takes a process: a server, redis-server or a command line; the
names these tests share with those in process come from tests/cli/test_cli.py."""

import json
import signal
import socket
import subprocess
import sys

import pytest

from growth_gevent.durability.snapshot import read_snapshot, write_snapshot
from growth_gevent.testing import open_redis_store, start_fails, wait_for
from scripts.generate_data import generate
from tests.helpers.cli import BIG
from tests.helpers.support import ROOT


@pytest.mark.parametrize("command", [[sys.executable, "-m", "growth_gevent", "--help"],
                                     [sys.executable, "-m", "growth_gevent", "--version"]])
def test_help_and_version_of_the_real_entry_point_exit_0_without_serving(command):
    result = subprocess.run(command, cwd=ROOT, env={"PORT": "0"}, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    assert result.stdout.startswith(("usage: growth-gevent", "growth-gevent "))
    assert "listening on" not in result.stderr


def test_an_unknown_command_word_is_named_not_taken_for_serve():
    result = subprocess.run([sys.executable, "-m", "growth_gevent", "lod", "x"], cwd=ROOT, env={"PORT": "0"},
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "error: unknown command 'lod' (commands: serve, load, export, check)" in result.stderr
    assert "unrecognized arguments" not in result.stderr and "listening on" not in result.stderr


def test_check_without_a_path_says_so_in_plain_text_as_its_other_messages(tmp_path):
    without = subprocess.run([sys.executable, "-m", "growth_gevent", "check"], cwd=ROOT, env={},
                             capture_output=True, text=True, timeout=30)
    missing = subprocess.run([sys.executable, "-m", "growth_gevent", "check", str(tmp_path / "none")], cwd=ROOT,
                             env={}, capture_output=True, text=True, timeout=30)
    assert (without.returncode, missing.returncode) == (2, 2)
    assert without.stdout == "cannot check: give the snapshot's path (or set GROWTH_SNAPSHOT)\n"
    assert missing.stdout.startswith("cannot check: ")
    assert without.stderr == missing.stderr == ""

@pytest.mark.parametrize("name, raw", [("PORT", "abc"), ("GROWTH_MAX_BODY_BYTES", "-5"),
                                       ("GROWTH_ACCESS_LOG", "sometimes")])
def test_a_bad_setting_stops_start_up(name, raw):
    result = subprocess.run([sys.executable, "-m", "growth_gevent"], cwd=ROOT, env={name: raw},
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert f"configuration error: {name}" in result.stderr


def test_a_port_in_use_stops_start_up():

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "growth_gevent"], cwd=ROOT,
                                env={"HOST": "127.0.0.1", "PORT": str(port)},
                                capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr


def test_a_restart_on_the_snapshot_keeps_every_record(servers, big_records, tmp_path):
    snapshot = str(tmp_path / "growth.snapshot")
    first = servers(GROWTH_SNAPSHOT=snapshot)
    first.request("POST", "/api/v1/growth", json.dumps(big_records).encode(), {"Content-Type": "application/json"})
    first.wait_until_complete()
    expected = as_store(big_records)
    for path, value in (("/api/v1/growth/BRZ/NGDP_R/2002", 1.5), ("/api/v1/growth/new/one/1999", 2),
                        ("/api/v1/growth/BRZ/NGDP_R/2003", -3.25)):
        assert first.request_json("PUT", path, {"value": value})[0] in (200, 201)
        _, country, indicator, year = path.rsplit("/", 3)
        expected[(country.upper(), indicator.upper(), int(year))] = value
    for record in big_records[100:102]:
        path = f"/api/v1/growth/{record['Country']}/{record['Indicator']}/{record['Year']}"
        assert first.request("DELETE", path)[0] == 204
        del expected[(record["Country"], record["Indicator"], record["Year"])]
    first.terminate()
    assert first.wait_exit(20) == 0

    assert dict(read_snapshot(snapshot)) == expected
    second = servers(GROWTH_SNAPSHOT=snapshot)
    assert second.request_json("GET", "/api/v1/growth/size") == (200, {"size": len(expected)})
    status = second.request_json("GET", "/api/v1/growth/post/status")[1]
    assert (status["msg"], status["count"], status["test value"]) == ("complete", len(expected), 1.5)
    assert second.request_json("GET", "/api/v1/growth/NEW/ONE/1999")[1]["Value"] == 2
    deleted = big_records[100]
    deleted_path = f"/api/v1/growth/{deleted['Country']}/{deleted['Indicator']}/{deleted['Year']}"
    assert second.request("GET", deleted_path)[0] == 404


def test_with_a_1s_interval_a_kill_9_keeps_what_was_written_before(servers, tmp_path):
    snapshot = str(tmp_path / "growth.snapshot")
    first = servers(GROWTH_SNAPSHOT=snapshot, GROWTH_SNAPSHOT_INTERVAL="1")
    first.request_json("PUT", "/api/v1/growth/BRZ/NGDP_R/2002", {"value": 42.5})

    def snapshot_has_the_record():
        try:
            return dict(read_snapshot(snapshot)) == {("BRZ", "NGDP_R", 2002): 42.5}
        except FileNotFoundError:
            return False

    wait_for(snapshot_has_the_record, timeout=10)
    first.process.kill()
    first.wait_exit(10)
    second = servers(GROWTH_SNAPSHOT=snapshot)
    assert second.request_json("GET", "/api/v1/growth/BRZ/NGDP_R/2002")[1]["Value"] == 42.5


def test_a_kill_9_while_a_snapshot_is_written_leaves_the_previous_one_whole(servers, big_records, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    temporary = tmp_path / ".growth.snapshot.tmp"
    server = servers(GROWTH_SNAPSHOT=str(snapshot), GROWTH_SNAPSHOT_INTERVAL="1")
    server.request("POST", "/api/v1/growth", json.dumps(big_records).encode(), {"Content-Type": "application/json"})
    server.wait_until_complete()
    server.wait_for_line(f"snapshot written: {BIG} records", 10)

    values = iter(range(1000))

    def frozen_while_writing():
        """Change a record, freeze the server once its next snapshot's temporary file exists, and
        say whether it still does (frozen mid-write) or the rename came first (let it go on)."""
        server.request_json("PUT", "/api/v1/growth/BRZ/NGDP_R/2002", {"value": next(values)})
        wait_for(temporary.exists, timeout=10, interval=0.001)
        server.process.send_signal(signal.SIGSTOP)
        if temporary.exists():
            return True
        server.process.send_signal(signal.SIGCONT)
        return False

    wait_for(frozen_while_writing, timeout=60)
    server.process.kill()
    server.wait_exit(10)
    assert temporary.exists()  # the kill came in the middle of a write
    assert len(read_snapshot(str(snapshot))) == BIG
    servers(GROWTH_SNAPSHOT=str(snapshot))
    assert sorted(p.name for p in tmp_path.iterdir() if ".journal." not in p.name) == [
        "growth.snapshot", "growth.snapshot.id", "growth.snapshot.lock"]


@pytest.mark.parametrize("cut, message", [(10, "is not a complete snapshot"), (1000, "is not a complete snapshot"),
                                          (-2, "is damaged: its checksum does not match")])
def test_a_truncated_snapshot_stops_start_up_and_is_left_as_it_was(tmp_path, cut, message):
    snapshot = tmp_path / "growth.snapshot"
    write_snapshot(str(snapshot), [(("BRZ", "NGDP_R", y), 1.0) for y in range(100)])
    snapshot.write_bytes(snapshot.read_bytes()[:cut])
    before = snapshot.read_bytes()
    result = start_fails(GROWTH_SNAPSHOT=str(snapshot))
    assert result.returncode == 2
    assert message in result.stderr
    assert snapshot.read_bytes() == before


def test_a_snapshot_that_is_not_ours_stops_start_up(tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    snapshot.write_text('{"format": "something-else"}')
    result = start_fails(GROWTH_SNAPSHOT=str(snapshot))
    assert result.returncode == 2
    assert "is not a growth-gevent snapshot" in result.stderr


def test_a_snapshot_in_a_folder_that_cannot_be_written_stops_start_up(tmp_path):
    result = start_fails(GROWTH_SNAPSHOT=str(tmp_path / "missing" / "growth.snapshot"))
    assert result.returncode == 2
    assert "cannot write in" in result.stderr


def test_a_preload_file_is_loaded_when_there_is_no_snapshot(servers, tmp_path):
    preload = tmp_path / "preload.json"
    preload.write_text(json.dumps(generate(500, seed=3)))
    server = servers(GROWTH_PRELOAD=str(preload), GROWTH_SNAPSHOT=str(tmp_path / "growth.snapshot"))
    assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 500})
    status = server.request_json("GET", "/api/v1/growth/post/status")[1]
    assert (status["msg"], status["count"], status["test value"]) == ("complete", 500, 183.26)


def test_a_snapshot_wins_over_the_preload_file(servers, tmp_path):
    preload = tmp_path / "preload.json"
    preload.write_text(json.dumps(generate(500, seed=3)))
    snapshot = tmp_path / "growth.snapshot"
    write_snapshot(str(snapshot), [(("A", "B", 1), 2)])
    server = servers(GROWTH_PRELOAD=str(preload), GROWTH_SNAPSHOT=str(snapshot))
    assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 1})


@pytest.mark.parametrize("content, message", [
    ('[{"Country": "A", "Indicator": "B", "Value": 1, "Year": 1}, {"Country": "A"}]',
     "record 1: Indicator must be a non-empty string"),
    ("[{", "is not JSON"),
])
def test_a_bad_preload_file_stops_start_up_naming_the_record(tmp_path, content, message):
    preload = tmp_path / "preload.json"
    preload.write_text(content)
    result = start_fails(GROWTH_PRELOAD=str(preload))
    assert result.returncode == 2
    assert f"GROWTH_PRELOAD {preload}" in result.stderr
    assert message in result.stderr


def test_a_redis_url_that_cannot_be_parsed_stops_start_up():
    result = start_fails(GROWTH_STORE="redis://127.0.0.1:notaport/0")
    assert result.returncode == 2
    assert "cannot start:" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_redis_database_the_server_does_not_have_stops_start_up(redis_server, workers):
    result = start_fails(GROWTH_STORE=redis_server.url.rsplit("/", 1)[0] + "/99", WEB_CONCURRENCY=workers)
    assert result.returncode == 2
    assert "cannot start: the Redis URL selects database 99, but the server has 16 (0 to 15)" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_redis_that_holds_records_is_not_given_the_preload_and_without_one_nothing_is_said(servers, redis_server,
                                                                                                 tmp_path):
    redis_server.flush()
    holder = open_redis_store(redis_server.url, pool_size=1)
    holder.put(("A", "B", 1), 1)
    holder.close()
    preload = tmp_path / "preload.json"
    preload.write_text("[]")
    with_preload = servers(GROWTH_STORE=redis_server.url, GROWTH_PRELOAD=str(preload))
    without = servers(GROWTH_STORE=redis_server.url)
    for server in (with_preload, without):
        server.terminate()
        assert server.wait_exit(20) == 0
    assert sum(f"GROWTH_PRELOAD {preload} not read: the store already holds 1 records" in line
               for line in with_preload.lines) == 1
    assert not any("GROWTH_PRELOAD" in line for line in without.lines)


@pytest.fixture(scope="module")
def big_records():
    return generate(BIG, seed=2002)


def as_store(records):
    return {(r["Country"].upper(), r["Indicator"].upper(), r["Year"]): r["Value"] for r in records}
