"""A store that existed never starts empty (issue 42): where the marker or the lock file shows that a store
lived, a missing snapshot with no segment is refused by start-up and ``check`` alike (exit 2), saying how to
start afresh on purpose (``check --forget``); a start that creates a store says so."""

import pytest

from growth_gevent.testing import start_fails
from tests.helpers.durability import check, put


def stopped_with_its_data_in_the_snapshot(servers, snapshot, writes=100):
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert any(f"new store at {snapshot}" in line for line in server.lines)
    for year in range(writes):
        assert put(server, year, year)[0] == 201
    server.terminate()
    assert server.wait_exit(20) == 0
    assert not list(snapshot.parent.glob("growth.snapshot.journal.*"))  # all of it in the snapshot


@pytest.mark.parametrize("removed, signs", [
    ([""], [".id", ".lock"]),
    (["", ".id"], [".lock"]),
    (["", ".lock"], [".id"]),
], ids=["the snapshot", "the snapshot and the marker", "the snapshot and the lock file"])
def test_a_store_whose_snapshot_is_gone_is_refused_by_start_up_and_check_until_forgotten(servers, tmp_path, removed,
                                                                                          signs):
    snapshot = tmp_path / "growth.snapshot"
    stopped_with_its_data_in_the_snapshot(servers, snapshot)
    for suffix in removed:
        (tmp_path / f"growth.snapshot{suffix}").unlink()
    said = (f"no snapshot {snapshot} and no journal segment {snapshot}.journal.N beside it, but "
            f"{' and '.join(f'{snapshot}{sign}' for sign in signs)} show")
    refused = start_fails(GROWTH_SNAPSHOT=str(snapshot))
    assert refused.returncode == 2, refused.stderr
    assert f"cannot start: {said}" in refused.stderr
    assert f"`growth-gevent check --forget {snapshot}`" in refused.stderr
    checked = check(snapshot)
    assert checked.returncode == 2 and f"cannot check: {said}" in checked.stdout
    assert not (tmp_path / "growth.snapshot").exists()
    assert not list(tmp_path.glob("growth.snapshot.journal.*"))  # the refused start made nothing

    forgotten = check(snapshot, "--forget")
    assert forgotten.returncode == 0, forgotten.stdout + forgotten.stderr
    assert f"forgot the store at {snapshot}" in forgotten.stdout
    assert sorted(tmp_path.iterdir()) == []
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert any(f"new store at {snapshot}" in line for line in server.lines)
    assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 0})


def test_forget_refuses_while_the_store_has_its_files_or_a_server_runs(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    server = servers(GROWTH_SNAPSHOT=str(snapshot))  # a segment: the store has a file
    refused = check(snapshot, "--forget")
    assert refused.returncode == 2 and "cannot forget: the store at" in refused.stdout
    server.terminate()
    assert server.wait_exit(20) == 0
    files = sorted(tmp_path.iterdir())
    assert check(snapshot, "--forget").returncode == 2  # the snapshot
    assert sorted(tmp_path.iterdir()) == files


def test_forget_that_cannot_remove_the_marker_says_why_in_a_line(tmp_path):
    """A marker that is not a file (a folder made by hand, a mount point): ``--forget`` cannot remove it, and
    says so as ``check`` says everything, exit 2, no traceback."""
    snapshot = tmp_path / "growth.snapshot"
    (tmp_path / "growth.snapshot.id").mkdir()
    refused = check(snapshot, "--forget")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr
    assert f"cannot forget: [Errno 21] Is a directory: '{snapshot}.id'" in refused.stdout


def test_a_new_store_stopped_before_any_write_leaves_a_snapshot_and_starts_again(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    stopped_with_its_data_in_the_snapshot(servers, snapshot, writes=0)
    assert snapshot.exists()
    again = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert not any("new store" in line for line in again.lines)
    assert check(snapshot).returncode == 0


def test_a_first_start_that_fails_leaves_no_sign_of_a_store(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    refused = start_fails(GROWTH_SNAPSHOT=str(snapshot), GROWTH_PRELOAD=str(tmp_path / "nosuch.json"))
    assert refused.returncode == 2, refused.stderr
    assert sorted(tmp_path.iterdir()) == []
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert any(f"new store at {snapshot}" in line for line in server.lines)
