"""One owner, whatever happens to the lock file (issue 42): a server locks the snapshot's folder itself, which
cannot be removed from under it while it holds files there; a second server on the same path refuses to
start even after every file beside the data that is not the data was removed, and the first one's
acknowledged writes survive its kill -9."""

import shutil

from growth_gevent.testing import start_fails, wait_for
from tests.helpers.durability import check, put

STATUS = "/api/v1/growth/post/status"


def test_a_second_server_refuses_to_start_after_every_file_beside_the_data_was_removed(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    first = servers(GROWTH_SNAPSHOT=str(snapshot), GROWTH_SNAPSHOT_INTERVAL="3600")
    for year in range(5):
        assert put(first, year, year)[0] == 201
    data = {snapshot.name} | {path.name for path in tmp_path.glob("growth.snapshot.journal.*")}
    for path in tmp_path.iterdir():  # the lock file, the marker: "stale" files, a careless operator says
        if path.name not in data:
            path.unlink()

    refused = start_fails(GROWTH_SNAPSHOT=str(snapshot))
    assert refused.returncode == 2, refused.stderr
    assert (f"cannot start: GROWTH_SNAPSHOT {snapshot} is in use by another process, which holds the lock on its "
            f"folder {tmp_path}") in refused.stderr  # the lock file that named its pid is gone
    assert check(snapshot, "--repair").returncode == 2  # no repair under a running server either
    for year in range(5, 15):
        assert put(first, year, year)[0] == 201
    first.process.kill()
    first.process.wait()

    again = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert again.request_json("GET", "/api/v1/growth/size") == (200, {"size": 15})
    for year in range(15):
        assert again.request_json("GET", f"/api/v1/growth/A/B/{year}")[1]["Value"] == year


def test_stores_in_one_folder_run_side_by_side_and_each_refuses_a_second_server(servers, tmp_path):
    first = servers(GROWTH_SNAPSHOT=str(tmp_path / "growth.snapshot"))
    other = servers(GROWTH_SNAPSHOT=str(tmp_path / "other.snapshot"))
    for server, path in [(first, "growth.snapshot"), (other, "other.snapshot")]:
        assert put(server, 1, 1)[0] == 201
        refused = start_fails(GROWTH_SNAPSHOT=str(tmp_path / path))
        assert refused.returncode == 2, refused.stderr
        assert (f"is in use by another process (pid {server.process.pid}), which holds the lock on its folder "
                f"{tmp_path}") in refused.stderr


def test_a_folder_moved_away_under_a_running_server_refuses_writes_until_it_is_back(servers, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    snapshot = folder / "growth.snapshot"
    first = servers(GROWTH_SNAPSHOT=str(snapshot), GROWTH_FSYNC="always", GROWTH_SNAPSHOT_INTERVAL="1")
    for year in range(5):
        assert put(first, year, year)[0] == 201
    folder.rename(tmp_path / "moved")  # an operator's mv, then a new folder of the old name
    folder.mkdir()

    status, body = put(first, 5, 5)  # its journal would be in the moved folder: the next start would not see it
    assert status == 503, body
    assert f"the folder {folder} was removed or replaced" in body["msg"]
    assert first.request_json("GET", "/ready")[0] == 503
    assert first.request_json("GET", "/api/v1/growth/A/B/5")[0] == 404  # undone, as any write that failed
    def snapshot_failed():  # the snapshotter's attempt, at the interval, fails the same way
        return "removed or replaced" in (first.request_json("GET", STATUS)[1]["snapshot error"] or "")
    wait_for(snapshot_failed, timeout=30, interval=0.2)
    assert list(folder.iterdir()) == []  # nothing written into a folder this server does not hold

    folder.rmdir()
    (tmp_path / "moved").rename(folder)  # back: the snapshot retried succeeds, and writes are accepted again
    wait_for(lambda: put(first, 6, 6)[0] == 201, timeout=60, interval=0.5)
    first.process.kill()
    first.process.wait()
    again = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert again.request_json("GET", "/api/v1/growth/size") == (200, {"size": 6})


def test_a_folder_removed_and_made_again_under_a_running_server_gets_none_of_its_writes(servers, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    first = servers(GROWTH_SNAPSHOT=str(folder / "growth.snapshot"), GROWTH_SNAPSHOT_INTERVAL="1")
    assert put(first, 1, 1)[0] == 201
    shutil.rmtree(folder)  # an operator's rm -rf, then a new folder of the old name
    folder.mkdir()

    status, body = put(first, 2, 2)
    assert status == 503, body
    assert f"the folder {folder} was removed or replaced" in body["msg"]
    wait_for(lambda: "removed or replaced" in (first.request_json("GET", STATUS)[1]["snapshot error"] or ""),
             timeout=30, interval=0.2)
    assert list(folder.iterdir()) == []  # no snapshot and no segment where the next start would read them
    assert first.request_json("GET", "/api/v1/growth/A/B/1")[1]["Value"] == 1  # reads go on from memory
