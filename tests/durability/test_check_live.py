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
