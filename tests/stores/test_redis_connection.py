"""Connecting to Redis: nothing listening, TLS, a unix socket, a client limit, a database it lacks."""


import pytest

from growth_gevent.stores.base import StoreUnavailable
from growth_gevent.testing import RedisServer
from tests.helpers.redis_support import (
    KEY,
    open_store,
)


def test_store_calls_raise_store_unavailable_when_nothing_listens():
    server = RedisServer()  # a free port, never started
    store = open_store(server)
    try:
        with pytest.raises(StoreUnavailable):
            store.get(KEY)
        assert store.wait_idle(0.1) is False
    finally:
        store.close()


