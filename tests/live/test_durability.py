"""No acknowledged write lost, as only real processes show it: one owner per snapshot file, snapshots
that fail and recover, a Redis restarted empty."""

import json
import resource

import pytest

from support import SAMPLE
from growth_gevent.snapshot import read_snapshot, write_snapshot
from live import start_fails, wait_for
from redis_server import RedisServer

RECORD = "/api/v1/growth/A/B/{}"


def put(server, year, value):
    return server.request_json("PUT", RECORD.format(year), {"value": value})


def file_size_limit(server, limit):
    """Files the server writes cannot grow past ``limit`` bytes: its writes fail with EFBIG (Python
    ignores SIGXFSZ), as on a full disk; raising the limit again is the space coming back."""
    resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))


def test_a_second_server_on_a_snapshot_path_refuses_to_start_and_leaves_the_first_its_data(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    first = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert put(first, 1, 1.5)[0] == 201
    temporary = tmp_path / ".growth.snapshot.tmp"
    temporary.write_text("as if the first were writing a snapshot")

    second = start_fails(GROWTH_SNAPSHOT=str(snapshot))
    assert second.returncode == 2
    assert (f"cannot start: GROWTH_SNAPSHOT {snapshot} is in use by another process (pid {first.process.pid}), "
            f"which holds the lock {snapshot}.lock") in second.stderr
    assert temporary.read_text() == "as if the first were writing a snapshot"

    assert put(first, 2, 2.5)[0] == 201
    first.terminate()
    assert first.wait_exit(20) == 0
    assert dict(read_snapshot(str(snapshot))) == {("A", "B", 1): 1.5, ("A", "B", 2): 2.5}
    again = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert again.request_json("GET", "/api/v1/growth/size") == (200, {"size": 2})


def test_after_a_failed_snapshot_writes_answer_503_naming_the_cause_until_one_succeeds(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    server = servers(GROWTH_SNAPSHOT=str(snapshot), GROWTH_SNAPSHOT_INTERVAL="1")
    assert put(server, 1, 1)[0] == 201
    server.wait_for_line("snapshot written: 1 records", 10)

    file_size_limit(server, 10)
    assert put(server, 2, 2)[0] == 201  # acknowledged before any snapshot failed: kept in memory
    server.wait_for_line(r"level=error .*snapshot to \S+ failed \(1 in a row\): \[Errno 27\] File too large", 10)
    status, body = put(server, 3, 3)
    assert status == 503 and "File too large" in body["msg"]
    bulk = server.request("POST", "/api/v1/growth", b'[{"Country": "A", "Indicator": "B", "Value": 3, "Year": 3}]',
                          {"Content-Type": "application/json"})
    assert bulk[0] == 503 and b"File too large" in bulk[1]
    assert server.request("DELETE", RECORD.format(1))[0] == 503
    assert server.request_json("GET", RECORD.format(2)) == (200, {"Country": "A", "Indicator": "B", "Value": 2,
                                                                 "Year": 2})
    assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 2})
    assert dict(read_snapshot(str(snapshot))) == {("A", "B", 1): 1}  # the last good one, whole
    status = server.request_json("GET", "/api/v1/growth/post/status")[1]
    assert status["last snapshot"] == pytest.approx(snapshot.stat().st_mtime, abs=1)
    assert "File too large" in status["snapshot error"]
    assert "growth_writes_refused 1.0" in server.request("GET", "/metrics")[1].decode()

    file_size_limit(server, resource.RLIM_INFINITY)
    server.wait_for_line(r"level=warning .*snapshot written after \d+ failed attempts: 2 records .*"
                         r"writes are accepted again", 10)
    assert put(server, 3, 3)[0] == 201
    status = server.request_json("GET", "/api/v1/growth/post/status")[1]
    assert (status["last snapshot"], status["snapshot error"]) == (pytest.approx(snapshot.stat().st_mtime, abs=1), None)
    assert "growth_writes_refused 0.0" in server.request("GET", "/metrics")[1].decode()
    server.terminate()
    assert server.wait_exit(20) == 0
    assert dict(read_snapshot(str(snapshot))) == {("A", "B", 1): 1, ("A", "B", 2): 2, ("A", "B", 3): 3}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["growth.snapshot", "growth.snapshot.lock"]


def test_a_last_snapshot_that_fails_exits_1_saying_so_and_leaves_the_previous_one(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    write_snapshot(str(snapshot), [(("A", "B", 1), 1)])
    before = snapshot.read_bytes()
    server = servers(GROWTH_SNAPSHOT=str(snapshot))  # every 60 s: the last snapshot is its first
    assert put(server, 2, 2)[0] == 201
    file_size_limit(server, 10)
    server.terminate()
    assert server.wait_exit(20) == 1
    assert any(f"level=error logger=growth_gevent msg=\"last snapshot to {snapshot} failed (1 in a row): "
               "[Errno 27] File too large" in line and "the changes since the last snapshot written are lost" in line
               for line in server.lines)
    assert snapshot.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["growth.snapshot", "growth.snapshot.lock"]


def test_a_redis_restarted_empty_gets_the_preload_again_once(servers):
    redis = RedisServer().start()
    try:
        server = servers(GROWTH_STORE=redis.url, WEB_CONCURRENCY="2", GROWTH_PRELOAD=str(SAMPLE))
        assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 9})
        assert put(server, 1, 1)[0] == 201

        redis.stop()
        redis.start()  # on the same port, empty: no persistence
        wait_for(lambda: server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 9}), timeout=20)
        status = server.wait_until_complete()
        assert (status["jobs accepted"], status["count"]) == (1, 9)
        assert server.request("GET", RECORD.format(1))[0] == 404  # written after the preload: lost with Redis
        for record in json.loads(SAMPLE.read_text()):
            path = f"/api/v1/growth/{record['Country']}/{record['Indicator']}/{record['Year']}"
            assert server.request_json("GET", path)[1]["Value"] == record["Value"]
        server.read_available_lines()
        assert sum("the store holds no records and no trace of initial data" in line for line in server.lines) >= 1
        assert sum(f"loaded 9 records from GROWTH_PRELOAD {SAMPLE}" in line for line in server.lines) == 2
    finally:
        redis.stop()
