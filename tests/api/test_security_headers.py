"""Every answer says ``X-Content-Type-Options: nosniff`` (a browser must not take a body for another type
than the one it is sent as), whoever writes it: a resource, falcon's own errors, an error handler, the
server's raw answers; and the docs page sends a Content Security Policy."""

import gevent.socket
import pytest

from growth_gevent.config import Config
from growth_gevent.http.responses import raw_response, too_many_connections
from growth_gevent.http.server import listen, make_server
from growth_gevent.testing import read_response
from tests.helpers.shared_app import SharedApp
from tests.helpers.support import memory_store

NOSNIFF = ("X-Content-Type-Options", "nosniff")
RECORD = "/api/v1/growth/BRZ/NGDP_R/2002"


@pytest.fixture(scope="module")
def shared():
    return SharedApp(Config(max_body_bytes=64 * 1024))


@pytest.fixture
def client(shared):
    """The app on a fresh store that holds at most one record."""
    store = memory_store(max_records=1)
    with shared.client(store) as client:
        yield client
    store.close()


@pytest.mark.parametrize("method, path, body, status", [
    ("GET", "/ping", None, 200),
    ("HEAD", "/ping", None, 200),
    ("PUT", RECORD, {"value": 1}, 200),
    ("GET", "/api/v1/growth?format=csv", None, 200),
    ("GET", "/api/v1/growth/size", None, 200),
    ("GET", "/openapi.json", None, 200),
    ("GET", "/docs", None, 200),
    ("GET", "/docs/init.js", None, 200),
    ("GET", "/", None, 400),  # the sink
    ("GET", "/nope", None, 404),  # falcon's own
    ("PATCH", RECORD, None, 405),  # falcon's own
    ("PUT", RECORD, {"value": "x"}, 422),  # an error handler's
    ("PUT", "/api/v1/growth/A/B/1", {"value": 1}, 507),
    ("OPTIONS", "/ping", None, 200),
])
def test_every_answer_says_nosniff(client, method, path, body, status):
    client.put_json(RECORD, {"value": 0})  # the store is full from here on
    response = client.request(path, method=method, status=status, expect_errors=True,
                              **({} if body is None else {"json": body}))
    assert response.headers[NOSNIFF[0]] == NOSNIFF[1]
    assert response.headers.getall(NOSNIFF[0]) == [NOSNIFF[1]]


def test_a_304_says_nosniff(client):
    etag = client.get("/docs").headers["ETag"]
    assert client.get("/docs", headers={"If-None-Match": etag}, status=304).headers[NOSNIFF[0]] == NOSNIFF[1]


@pytest.mark.parametrize("answer", [raw_response(400, "malformed HTTP request"), too_many_connections()])
def test_the_servers_raw_answers_say_nosniff(answer):
    head = answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    assert b"X-Content-Type-Options: nosniff" in head


def test_pywsgis_answer_to_an_application_that_fails_says_nosniff():
    def fails(environ, start_response):
        raise RuntimeError("a bug")

    config = Config(host="127.0.0.1", port=0)
    server = make_server(fails, config, listen(config))
    server.start()
    try:
        sock = gevent.socket.create_connection(server.address[:2])
        sock.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
        status, headers, _ = read_response(sock)
        sock.close()
    finally:
        server.stop()
    assert (status, headers.get("x-content-type-options")) == (500, "nosniff")


def test_the_docs_page_allows_only_its_own_files_and_no_frame(client):
    policy = client.get("/docs").headers["Content-Security-Policy"]
    assert policy == "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
