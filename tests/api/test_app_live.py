"""What tests/api/test_app.py tests, where it takes a process: a redis-server that stops and comes back."""

import webtest

from growth_gevent.api.app import create_app
from growth_gevent.http.responses import RETRY_AFTER_SECONDS
from growth_gevent.testing import RedisServer, open_redis_store


def test_not_ready_while_redis_is_stopped_and_ready_again_once_it_is_back(config):
    server = RedisServer().start()
    store = open_redis_store(server.url, pool_size=2, timeout=1, chunk_size=4)
    try:
        client = webtest.TestApp(create_app(store, config))
        assert client.get("/ready").json == {"msg": "ready"}
        server.stop()
        for method in ("GET", "HEAD"):
            response = client.request("/ready", method=method, expect_errors=True)
            assert (response.status_int, response.headers["Retry-After"]) == (503, str(RETRY_AFTER_SECONDS))
        said = client.get("/ready", status=503).json["msg"]
        assert said.startswith("not ready: redis: cannot connect to Redis: ") and "refused" in said, said
        assert client.get("/ping").body == b"pong"  # liveness: the process itself is fine
        server.start()
        assert client.get("/ready").json == {"msg": "ready"}
    finally:
        store.close()
        server.stop()
