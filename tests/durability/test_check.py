"""`check` in-process: what only its own code decides (the live tests run it as a command on real files)."""

from growth_gevent.durability.check import DAMAGED, check


def test_forget_in_a_folder_that_does_not_exist_says_so_in_a_line(tmp_path):
    said = []
    assert check(str(tmp_path / "missing" / "growth.snapshot"), forget_store=True, say=said.append) == DAMAGED
    assert said == [f"cannot forget: the folder {tmp_path / 'missing'} does not exist"]
