"""One owner, whatever happens to the lock file (issue 42): a server locks the snapshot's folder itself, which
cannot be removed from under it while it holds files there; a second server on the same path refuses to
start even after every file beside the data that is not the data was removed, and the first one's
acknowledged writes survive its kill -9."""

from growth_gevent.testing import start_fails
from tests.helpers.durability import check, put


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
