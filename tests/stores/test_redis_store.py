"""The Redis store's own code, in-process, where no Redis is needed to show it (the rest: *_live.py)."""

import pytest

from growth_gevent.stores.redis.store import _with_scripts


class Lost:
    """A connection whose peer is gone: every send fails."""

    closed = False

    def sendall(self, data: bytes) -> None:
        raise ConnectionResetError("peer gone")

    def close(self) -> None:
        self.closed = True


def test_a_connection_lost_while_its_scripts_load_is_closed_not_left_to_the_collector():
    connection = Lost()
    with pytest.raises(ConnectionResetError):
        _with_scripts(lambda: connection)
    assert connection.closed
