"""``growth-gevent check`` on a path that holds nothing to check (issue 37): a clear message and exit 2, never
a pass nor a traceback, so that a typo in a backup check fails."""

import pytest

from tests.helpers.durability import check


@pytest.mark.parametrize("where, said", [
    ("nosuch.snap", "cannot check: no snapshot {path} and no journal segment {path}.journal.N beside it"),
    ("nosuch/growth.snapshot", "cannot check: the folder {folder} does not exist"),
    (".", "cannot check: {path} is a folder; give the snapshot file's path (GROWTH_SNAPSHOT)"),
], ids=["a missing file", "a missing folder", "a folder"])
@pytest.mark.parametrize("repair", [(), ("--repair",)], ids=["check", "repair"])
def test_check_of_a_missing_file_a_missing_folder_or_a_folder_says_so_and_exits_2(tmp_path, where, said, repair):
    path = tmp_path / where
    result = check(path, *repair)
    assert result.returncode == 2, result.stdout + result.stderr
    assert said.format(path=path, folder=path.parent) in result.stdout
    assert "Traceback" not in result.stderr
    assert sorted(tmp_path.iterdir()) == []  # not even a lock file left by --repair


@pytest.mark.parametrize("option, said", [("--repair", "cannot repair"), ("--forget", "cannot forget")])
def test_a_lock_file_that_cannot_be_opened_is_a_line_not_a_traceback(servers, tmp_path, option, said):
    """The lock file, which ``--repair`` and ``--forget`` take, cannot be opened for writing (a read-only
    folder, made here with a folder in its place): exit 2 saying why, no traceback, no file changed."""
    snapshot = tmp_path / "growth.snapshot"
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert server.request_json("PUT", "/api/v1/growth/A/B/1", {"value": 1})[0] == 201
    server.process.kill()
    server.process.wait()
    if option == "--forget":
        for segment in tmp_path.glob("growth.snapshot.journal.*"):
            segment.unlink()
    (tmp_path / "growth.snapshot.lock").unlink()
    (tmp_path / "growth.snapshot.lock").mkdir()
    files = {path: path.read_bytes() for path in tmp_path.iterdir() if path.is_file()}
    result = check(snapshot, option)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert f"{said}: [Errno 21] Is a directory: '{snapshot}.lock'" in result.stdout
    assert {path: path.read_bytes() for path in files} == files
