"""What tests/stores/test_redis_connection.py tests, where it takes a process: a redis-server over TLS, at its client
limit, without the database asked for, on a unix socket."""

import subprocess

import gevent
import pytest

from growth_gevent.stores.base import StoreUnavailable
from growth_gevent.testing import RedisServer, open_redis_store, wait_for
from tests.helpers.redis_support import (
    KEY,
    TIMEOUT,
    cache_record,
    open_store,
    served_from_cache,
    unavailable,
)


@pytest.fixture
def self_signed_redis(tmp_path):
    """A TLS-only Redis with a self-signed certificate, as Heroku's Redis add-on serves."""
    certificate, key = str(tmp_path / "certificate.pem"), str(tmp_path / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-keyout", key, "-out", certificate], check=True, capture_output=True)
    server = RedisServer(tls=(certificate, key)).start()
    yield server
    server.stop()


@pytest.mark.parametrize("verify_tls, works", [(True, False), (False, True)])
def test_a_self_signed_certificate_is_refused_unless_verification_is_off(self_signed_redis, verify_tls, works):
    store = open_redis_store(self_signed_redis.url, pool_size=2, timeout=TIMEOUT, verify_tls=verify_tls)
    try:
        if works:
            assert store.put(KEY, 1) is True and store.get(KEY) == 1
            with self_signed_redis.client() as direct:
                wait_for(lambda: served_from_cache(store, KEY, direct))  # its own connection is TLS too
        else:
            with pytest.raises(StoreUnavailable, match="certificate verify failed"):
                store.get(KEY)
    finally:
        store.close()


def test_a_redis_at_its_client_limit_is_unavailable_not_an_error():
    server = RedisServer(settings=["--maxclients", "1"]).start()
    store = open_store(server)
    try:
        with server.client() as only_client:
            only_client.ping()
            assert "max number of clients" in str(unavailable(store.size))
        assert store.size() == 0  # the slot is free again
    finally:
        store.close()
        server.stop()


def test_a_database_the_server_does_not_have_is_a_clear_value_error(own_redis):
    store = open_redis_store(own_redis.url.removesuffix("/0") + "/99", pool_size=2, timeout=TIMEOUT)
    try:
        with pytest.raises(ValueError, match=r"^the Redis URL selects database 99, but the server has 16 \(0 to 15\)$"):
            store.ping()
    finally:
        store.close()


def test_the_cache_follows_a_redis_on_a_unix_socket(tmp_path):
    path = tmp_path / "redis.sock"
    server = RedisServer(settings=["--unixsocket", str(path), "--unixsocketperm", "700"]).start()
    store = open_redis_store(f"unix://{path}", pool_size=2, timeout=TIMEOUT, cache_stale_seconds=3600)
    try:
        with server.client() as direct:
            cache_record(store, direct)
            direct.hset("growth:s:BRZ/NGDP_R", 2002, 2)
            wait_for(lambda: gevent.sleep(0.001) or store.get(KEY) == 2, timeout=5)
    finally:
        store.close()
        server.stop()
