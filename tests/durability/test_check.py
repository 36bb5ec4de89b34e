"""`check` and the store's marker in-process: what only their own code decides (the live tests run `check` as
a command on real files)."""

import errno
import os

import pytest

from growth_gevent.durability.check import DAMAGED, check
from growth_gevent.durability.identity import new_store_id, write_marker


def test_forget_in_a_folder_that_does_not_exist_says_so_in_a_line(tmp_path):
    said = []
    assert check(str(tmp_path / "missing" / "growth.snapshot"), forget_store=True, say=said.append) == DAMAGED
    assert said == [f"cannot forget: the folder {tmp_path / 'missing'} does not exist"]


def test_a_marker_that_cannot_be_written_whole_leaves_no_file_behind(tmp_path, monkeypatch):
    # Written as the snapshot is: a full disk at its fsync leaves neither the marker nor its temporary.
    def full(descriptor: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        write_marker(str(tmp_path / "growth.snapshot"), new_store_id())
    assert sorted(tmp_path.iterdir()) == []
