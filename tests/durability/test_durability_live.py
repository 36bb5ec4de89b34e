"""No acknowledged write lost, as only real processes show it: one owner per snapshot file, snapshots
that fail and recover, a Redis restarted empty."""

import json
import os
import random
import re
import resource
import threading
import time

import pytest

from growth_gevent.durability.snapshot import read_snapshot, write_snapshot
from growth_gevent.testing import RedisServer, start_fails, wait_for
from tests.helpers.durability import WRITERS, Writers, check_every_acknowledged_write, killed_after_writes, put
from tests.helpers.support import SAMPLE

RECORD = "/api/v1/growth/A/B/{}"


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
            f"which holds the lock on its folder {tmp_path} ({snapshot}.lock names the owner)") in second.stderr
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

    in_the_way = tmp_path / ".growth.snapshot.tmp"
    in_the_way.mkdir()  # where the snapshot is written first: every snapshot fails, the journal does not
    assert put(server, 2, 2)[0] == 201  # acknowledged before any snapshot failed: kept in memory
    server.wait_for_line(r"level=error .*snapshot to \S+ failed \(1 in a row\): \[Errno 21\] Is a directory", 10)
    status, body = put(server, 3, 3)
    assert status == 503 and "Is a directory" in body["msg"]
    bulk = server.request("POST", "/api/v1/growth", b'[{"Country": "A", "Indicator": "B", "Value": 3, "Year": 3}]',
                          {"Content-Type": "application/json"})
    assert bulk[0] == 503 and b"Is a directory" in bulk[1]
    assert server.request("DELETE", RECORD.format(1))[0] == 503
    assert server.request_json("GET", RECORD.format(2)) == (200, {"Country": "A", "Indicator": "B", "Value": 2,
                                                                 "Year": 2})
    assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 2})
    assert dict(read_snapshot(str(snapshot))) == {("A", "B", 1): 1}  # the last good one, whole
    status = server.request_json("GET", "/api/v1/growth/post/status")[1]
    assert status["last snapshot"] == pytest.approx(snapshot.stat().st_mtime, abs=1)
    assert "Is a directory" in status["snapshot error"]
    assert "growth_writes_refused 1.0" in server.request("GET", "/metrics")[1].decode()

    in_the_way.rmdir()
    server.wait_for_line(r"level=warning .*snapshot written after \d+ failed attempts: 2 records .*"
                         r"writes are accepted again", 10)
    assert put(server, 3, 3)[0] == 201
    status = server.request_json("GET", "/api/v1/growth/post/status")[1]
    assert (status["last snapshot"], status["snapshot error"]) == (pytest.approx(snapshot.stat().st_mtime, abs=1), None)
    assert "growth_writes_refused 0.0" in server.request("GET", "/metrics")[1].decode()
    server.terminate()
    assert server.wait_exit(20) == 0
    assert dict(read_snapshot(str(snapshot))) == {("A", "B", 1): 1, ("A", "B", 2): 2, ("A", "B", 3): 3}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["growth.snapshot", "growth.snapshot.id",
                                                          "growth.snapshot.lock"]


def test_a_last_snapshot_that_fails_exits_1_saying_so_and_the_journal_keeps_what_it_missed(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    write_snapshot(str(snapshot), [(("A", "B", 1), 1)])
    before = snapshot.read_bytes()
    server = servers(GROWTH_SNAPSHOT=str(snapshot))  # every 60 s: the last snapshot is its first
    assert put(server, 2, 2)[0] == 201
    file_size_limit(server, 10)
    server.terminate()
    assert server.wait_exit(20) == 1
    assert any(f"level=error logger=growth_gevent msg=\"last snapshot to {snapshot} failed (1 in a row): "
               "[Errno 27] File too large" in line and "the changes since the last snapshot written are in the "
               "journal, replayed at the next start" in line for line in server.lines)
    assert snapshot.read_bytes() == before
    again = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert again.request_json("GET", RECORD.format(2))[1]["Value"] == 2


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


# The journal (issue 17): every write answered 2xx or 202 survives kill -9.


@pytest.mark.parametrize("policy", ["always", "everysec", "no"])
def test_every_write_acknowledged_before_a_kill_9_at_a_random_moment_is_there_after_a_restart(
        servers, tmp_path, policy):
    snapshot = tmp_path / "growth.snapshot"
    runs = []
    for run in range(3):
        server = servers(GROWTH_SNAPSHOT=str(snapshot), GROWTH_FSYNC=policy, GROWTH_SNAPSHOT_INTERVAL="1")
        writers = Writers(server, first_year=run * WRITERS * 1000)
        runs.append(writers)
        wait_for(lambda writers=writers: len(writers.acknowledged) > 200)
        threading.Event().wait(random.uniform(0, 1.5))  # a random moment: between snapshots, or during one
        server.process.kill()
        server.process.wait()
        assert writers.join() > 0
        again = servers(GROWTH_SNAPSHOT=str(snapshot), GROWTH_FSYNC=policy)
        for earlier in runs:  # each run's writes, after as many crashes as followed them
            check_every_acknowledged_write(again, earlier)
        again.process.kill()  # the next run starts from what this one found, after another crash
        again.process.wait()


def bulk_body(records, value=1.5):
    return json.dumps([{"Country": "C", "Indicator": "D", "Value": value + year, "Year": year}
                       for year in range(records)]).encode()


def test_a_bulk_load_answered_202_survives_a_kill_9_right_after_the_answer(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    server = servers(GROWTH_SNAPSHOT=str(snapshot), GROWTH_BULK_CHUNK_RECORDS="100")
    assert put(server, 1, 1)[0] == 201
    status, _ = server.request("POST", "/api/v1/growth", bulk_body(20000), {"Content-Type": "application/json"})
    assert status == 202
    server.process.kill()
    server.process.wait()
    again = servers(GROWTH_SNAPSHOT=str(snapshot))
    again.wait_until_complete()
    assert again.request_json("GET", "/api/v1/growth/size") == (200, {"size": 20001})
    assert again.request_json("GET", "/api/v1/growth/C/D/19999")[1]["Value"] == 1.5 + 19999


def test_a_torn_last_record_is_dropped_with_a_warning_and_the_rest_is_served(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    [segment] = killed_after_writes(servers, snapshot)
    segment.write_bytes(segment.read_bytes()[:-4])  # a crash in the middle of the last write
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert any(f"{segment} ends in a torn record" in line for line in server.lines)
    assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 4})
    assert put(server, 9, 9)[0] == 201


def test_a_damaged_record_before_the_last_stops_start_up_with_exit_2_and_leaves_the_file(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    [segment] = killed_after_writes(servers, snapshot)
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0x01
    segment.write_bytes(data)
    refused = start_fails(GROWTH_SNAPSHOT=str(snapshot))
    assert refused.returncode == 2
    assert f"cannot start: {segment} is damaged" in refused.stderr
    assert segment.read_bytes() == data
    assert sorted(snapshot.parent.glob("growth.snapshot.journal.*")) == [segment]


@pytest.mark.parametrize("renamed", [False, True])
def test_a_kill_during_compaction_before_or_after_the_rename_loses_nothing(servers, tmp_path, renamed):
    """The files a kill -9 leaves in the middle of a snapshot, made exactly: hard links keep the old
    snapshot and segment as they were when the snapshot removed them; restoring them after a kill gives
    what a kill before the rename (both) or between the rename and the removal (the segment) leaves."""
    snapshot = tmp_path / "growth.snapshot"
    write_snapshot(str(snapshot), [(("A", "B", 0), 0)])
    server = servers(GROWTH_SNAPSHOT=str(snapshot), GROWTH_SNAPSHOT_INTERVAL="1", GROWTH_BULK_CHUNK_RECORDS="10")
    [old_segment] = snapshot.parent.glob("growth.snapshot.journal.*")
    for year in range(1, 4):
        assert put(server, year, year)[0] == 201
    assert server.request("POST", "/api/v1/growth", bulk_body(5000), {"Content-Type": "application/json"})[0] == 202
    assert server.request("DELETE", RECORD.format(2))[0] == 204
    os.link(old_segment, tmp_path / "segment.kept")
    os.link(snapshot, tmp_path / "snapshot.kept")
    server.wait_for_line("snapshot written", 10)
    assert not old_segment.exists()
    assert put(server, 3, 33)[0] == 200
    server.wait_until_complete()
    expected = {path: server.request_json("GET", path)[1] for path in
                [RECORD.format(year) for year in range(5)] + ["/api/v1/growth/size", "/api/v1/growth/C/D/4999"]}
    server.process.kill()
    server.process.wait()
    os.rename(tmp_path / "segment.kept", old_segment)
    if not renamed:
        os.rename(tmp_path / "snapshot.kept", snapshot)
    again = servers(GROWTH_SNAPSHOT=str(snapshot))
    again.wait_until_complete()
    assert {path: again.request_json("GET", path)[1] for path in expected} == expected


def test_a_full_disk_for_the_journal_answers_503_undoes_the_write_and_writes_resume_when_there_is_room(
        servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    # Ten records held by the snapshot: the next one is larger than the segment, so it fails too.
    write_snapshot(str(snapshot), [(("C", "D", year), year) for year in range(10)])
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert put(server, 1, 1)[0] == 201
    [segment] = snapshot.parent.glob("growth.snapshot.journal.*")
    file_size_limit(server, segment.stat().st_size + 5)
    status, body = put(server, 2, 2)
    assert status == 503
    assert body["msg"] == ("the write was not acknowledged: the journal could not be written: [Errno 27] File too "
                           "large")
    assert server.request("GET", RECORD.format(2))[0] == 404  # undone: not acknowledged, not visible
    assert put(server, 3, 3)[0] == 503
    assert "File too large" in server.request_json("DELETE", RECORD.format(1))[1]["msg"]
    assert server.request_json("GET", RECORD.format(1))[1]["Value"] == 1  # reads go on
    scrape = server.request("GET", "/metrics")[1].decode()
    assert "growth_writes_refused 1.0" in scrape
    assert 'growth_journal_last_error_timestamp_seconds{error="[Errno 27] File too large"}' in scrape

    # A snapshot is tried at once; its failure, the same error, is not said again
    # (tests/durability/test_integrity_live.py).
    wait_for(lambda: server.request_json("GET", "/api/v1/growth/post/status")[1]["snapshot error"]
             == "[Errno 27] File too large")
    file_size_limit(server, resource.RLIM_INFINITY)
    server.wait_for_line(r"snapshot written after \d+ failed attempts: 11 records .*writes are accepted again", 10)
    assert put(server, 4, 4)[0] == 201
    server.process.kill()
    server.process.wait()
    again = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert again.request_json("GET", "/api/v1/growth/size") == (200, {"size": 12})
    assert again.request("GET", RECORD.format(2))[0] == 404


def fsyncs(server):
    scrape = server.request("GET", "/metrics")[1].decode()
    return float(re.search(r"^growth_journal_fsync_duration_seconds_count (\S+)$", scrape, re.MULTILINE).group(1))


@pytest.mark.serial  # on disk within 1.5 s
def test_everysec_fsyncs_once_a_second_what_it_acknowledged_and_always_before_each_answer(servers, tmp_path):
    always = servers(GROWTH_SNAPSHOT=str(tmp_path / "always.snapshot"))
    everysec = servers(GROWTH_SNAPSHOT=str(tmp_path / "everysec.snapshot"), GROWTH_FSYNC="everysec")
    for server in (always, everysec):
        before = fsyncs(server)
        for year in range(20):
            assert put(server, year, year)[0] == 201
        server.after = fsyncs(server) - before
    assert always.after == 20  # one client: one fsync per write, none waiting for a timer
    assert everysec.after <= 2
    written = time.monotonic()
    wait_for(lambda: fsyncs(everysec) > everysec.after, timeout=3)
    assert time.monotonic() - written < 1.5  # what was acknowledged was on disk about a second later


def names(server):
    facet = server.request_json("GET", "/api/v1/growth/countries")[1]["items"]
    return {item["Country"]: item.get("name") for item in facet}


def test_a_full_disk_refuses_a_names_patch_whole_and_what_was_acknowledged_survives_kill_9(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    # A snapshot far larger than the segment: the one tried after the failure fails too.
    write_snapshot(str(snapshot), [(("C", "D", year), year) for year in range(200)])
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert server.request_json("PATCH", "/api/v1/growth/countries", {"C": {"name": "Cee"}})[0] == 204
    [segment] = snapshot.parent.glob("growth.snapshot.journal.*")
    file_size_limit(server, segment.stat().st_size + 5)

    status, body = server.request_json("PATCH", "/api/v1/growth/countries", {"C": {"name": "Sea"}, "A": {"name": "Ay"}})
    assert status == 503, body
    assert "the journal could not be written" in body["msg"]
    assert names(server) == {"C": "Cee"}  # undone whole: neither name of the patch
    wait_for(lambda: server.request_json("GET", "/api/v1/growth/post/status")[1]["snapshot error"]
             == "[Errno 27] File too large")
    assert server.request_json("PATCH", "/api/v1/growth/countries", {"C": {"name": "Sea"}})[0] == 503
    file_size_limit(server, resource.RLIM_INFINITY)
    server.wait_for_line(r"snapshot written after \d+ failed attempts.*writes are accepted again", 10)
    assert server.request_json("PATCH", "/api/v1/growth/countries", {"C": {"name": "Sea"}})[0] == 204
    server.process.kill()
    server.process.wait()

    again = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert names(again) == {"C": "Sea"}
