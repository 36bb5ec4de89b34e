"""The Redis store's own code, in-process, where no Redis is needed to show it (the rest: *_live.py)."""

import pathlib

import pytest

from growth_gevent.stores.redis import scripts
from growth_gevent.stores.redis.store import _with_scripts


class Lost:
    """A connection whose peer is gone: every send fails."""

    closed = False

    def sendall(self, data: bytes) -> None:
        raise ConnectionResetError("peer gone")

    def unasked(self) -> None:
        return None  # nothing came before it went

    def close(self) -> None:
        self.closed = True


def test_a_connection_lost_while_its_scripts_load_is_closed_not_left_to_the_collector():
    connection = Lost()
    with pytest.raises(ConnectionResetError):
        _with_scripts(lambda: connection)
    assert connection.closed


def test_every_script_but_the_functions_prepended_to_others_is_loaded_as_a_connection_opens():
    """describe.lua too: a connection to a restarted Redis loads it with the others."""
    preludes = {"order", "tally", "tally_many"}
    files = {path.stem for path in (pathlib.Path(scripts.__file__).parent / "lua").glob("*.lua")}
    assert sorted(script.name for script in scripts.EVERY) == sorted(files - preludes)
