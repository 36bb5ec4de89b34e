"""What only a socket shows, against a real server process."""

import json
import selectors
import socket
import time

import pytest

from growth_gevent.testing import LiveServer, closed_by_peer, read_response, wait_for
from scripts.generate_data import generate

CONCURRENT_CONNECTIONS = 1000


@pytest.fixture
def server(request, deployment):
    live = LiveServer(**deployment, **getattr(request, "param", {})).start()
    yield live
    live.stop()


@pytest.fixture(scope="module")
def big_payload():
    return json.dumps(generate(42450, seed=2002)).encode()


def test_keep_alive_reuses_one_connection(server):
    connection = server.connection()
    connection.connect()
    first_socket = connection.sock
    for path in ("/ping", "/api/v1/growth/size", "/nope", "/api/v1/growth/size"):
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        assert (response.getheader("Connection"), response.getheader("Keep-Alive")) == (None, "timeout=95")
        assert connection.sock is first_socket
    connection.close()


def test_a_thousand_concurrent_connections_are_all_served(server):
    sockets = [server.socket() for _ in range(CONCURRENT_CONNECTIONS)]
    selector = selectors.DefaultSelector()
    request = b"GET /api/v1/growth/size HTTP/1.1\r\nHost: t\r\n\r\n"
    for sock in sockets:
        sock.sendall(request)
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, bytearray())
    answered = 0
    while answered < CONCURRENT_CONNECTIONS:
        events = selector.select(timeout=30)
        assert events, f"only {answered} of {CONCURRENT_CONNECTIONS} answered"
        for key, _ in events:
            key.data.extend(key.fileobj.recv(4096))
            if key.data.endswith(b'{"size":0}'):
                assert key.data.startswith(b"HTTP/1.1 200 OK\r\n")
                selector.unregister(key.fileobj)
                answered += 1
    for sock in sockets:
        sock.close()


def test_a_chunked_upload_is_read_whole(server):
    records = generate(500, seed=7)
    body = json.dumps(records).encode()
    parts = (body[i:i + 1000] for i in range(0, len(body), 1000))
    connection = server.connection()
    connection.request("POST", "/api/v1/growth", body=parts, encode_chunked=True,
                       headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    assert (response.status, json.loads(response.read())) == (202, {"msg": "In progress"})
    assert server.wait_until_complete()["count"] == 500
    assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 500})


@pytest.mark.parametrize("server", [{"GROWTH_MAX_BODY_BYTES": "1000"}], indirect=True)
def test_an_oversize_body_is_refused_without_being_read(server):
    sock = server.socket()
    sock.sendall(b"POST /api/v1/growth HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 1000000000000\r\n\r\n[")
    status, headers, body = read_response(sock)
    assert status == 413
    assert json.loads(body) == {"msg": "request body is larger than 1000 bytes"}
    assert headers["connection"] == "close"
    assert wait_for(lambda: closed_by_peer(sock))
    assert server.request("GET", "/ping") == (200, b"pong")


@pytest.mark.parametrize("server", [{"GROWTH_MAX_BODY_BYTES": "1000"}], indirect=True)
def test_an_oversize_chunked_body_is_refused(server):
    connection = server.connection()
    connection.request("POST", "/api/v1/growth", body=iter([b"[" + b" " * 600] * 3), encode_chunked=True,
                       headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    assert response.status == 413
    assert json.loads(response.read())["msg"] == "request body is larger than 1000 bytes"


# Small chunks spread the load over many yields, so that reads must interleave with it.
@pytest.mark.parametrize("server", [{"GROWTH_BULK_CHUNK_RECORDS": "50"}], indirect=True)
def test_reads_are_answered_while_a_3mb_body_is_applied(server, big_payload):
    reader = server.connection()
    reader.connect()
    loader = server.socket()
    loader.sendall(b"POST /api/v1/growth HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(big_payload) + big_payload)
    assert read_response(loader)[0] == 202
    seen = []
    while not seen or seen[-1]["msg"] != "complete":
        reader.request("GET", "/api/v1/growth/post/status")
        response = reader.getresponse()
        assert response.status == 200
        seen.append(json.loads(response.read()))
    counts = [status["count"] for status in seen]
    assert counts == sorted(counts)
    assert seen[-1] == {"msg": "complete", "test value": 183.26, "count": 42450, "total": 42450,
                        "jobs accepted": 1, "jobs applied": 1}
    assert any(status["msg"] == "in progress" and 0 < status["count"] < 42450 for status in seen), seen
    assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 42450})


# Malformed heads are tests/http/requests/invalid/ (tests/http/test_head.py); these prove the wiring of the
# 414 and of the server's chunked reader (growth_gevent/http/bodies.py), on each deployment.
@pytest.mark.parametrize("raw, status", [
    (b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: t\r\n\r\n", 414),
    ((b"POST /api/v1/growth HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
      b"Transfer-Encoding: chunked\r\n\r\nzz\r\n[]\r\n0\r\n\r\n"), 400),
], ids=["20kB-request-line", "bad-chunk"])
def test_malformed_http_gets_a_json_error_and_disturbs_no_one(server, raw, status):
    bystander = server.connection()
    bystander.request("GET", "/ping")
    assert bystander.getresponse().read() == b"pong"
    sock = server.socket()
    sock.sendall(raw)
    answer_status, headers, body = read_response(sock)
    assert answer_status == status
    assert headers["content-type"] == "application/json"
    assert set(json.loads(body)) == {"msg"}
    bystander.request("GET", "/ping")
    assert bystander.getresponse().read() == b"pong"


def test_sigterm_answers_a_request_sent_whole_then_exits_0(server):
    payload = json.dumps(generate(500, seed=3)).encode()
    idle = server.connection()
    idle.request("GET", "/ping")
    idle.getresponse().read()
    upload = server.socket()
    upload.sendall(b"POST /api/v1/growth HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                   b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(payload))
    # The server asks for the body only once the request is being handled.
    assert upload.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n")
    upload.sendall(payload)
    server.terminate()
    for _ in range(int(server.env.get("WEB_CONCURRENCY", 1))):  # each worker closes its listener
        server.wait_for_line("shutting down", 10)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=5)
    assert closed_by_peer(idle.sock)
    status, _, body = read_response(upload)
    assert (status, json.loads(body)) == (202, {"msg": "In progress"})
    assert server.wait_exit(10) == 0
    assert any(line.rstrip().endswith("msg=stopped") for line in server.lines)


HALF_SENT = {
    "headers": b"GET /ping HTTP/1.1\r\nHost: t\r\nX-Slow: ",
    "body": b"POST /api/v1/growth HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n[{\"Country\": ",
}


def test_sigterm_drops_half_sent_requests_and_exits_within_seconds(server):
    idle = [server.connection() for _ in range(50)]
    for connection in idle:
        connection.request("GET", "/ping")
        connection.getresponse().read()
    half_sent = [server.socket() for _ in range(10)]
    for index, sock in enumerate(half_sent):
        sock.sendall(HALF_SENT["headers" if index % 2 else "body"])
    assert server.request("GET", "/ping") == (200, b"pong")  # every half-sent request has been read
    started = time.monotonic()
    server.terminate()
    assert server.wait_exit(5) == 0
    assert time.monotonic() - started < 3
    assert all(closed_by_peer(sock) for sock in half_sent)


def test_sigint_with_idle_keep_alive_clients_exits_at_once(server):
    connections = [server.connection() for _ in range(20)]
    for connection in connections:
        connection.request("GET", "/ping")
        connection.getresponse().read()
    server.process.send_signal(2)
    assert server.wait_exit(5) == 0


@pytest.mark.parametrize("server", [{"GROWTH_ACCESS_LOG": "on"}], indirect=True)
def test_the_access_log_is_one_logfmt_line_per_request(server):
    server.request("GET", "/api/v1/growth/size")
    server.request("PUT", "/api/v1/growth/BRZ/NGDP_R/2002", b"nope", {"Content-Type": "application/json"})
    first = server.wait_for_line(r"logger=growth_gevent.access (.*)", 10).group(1)
    second = server.wait_for_line(r"logger=growth_gevent.access (.*)", 10).group(1)
    fields = [dict(pair.split("=", 1) for pair in line.split()) for line in (first, second)]
    # In either order: with two workers each may serve one, and each logs once its answer is sent.
    assert sorted((f["method"], f["path"], f["status"]) for f in fields) == [
        ("GET", "/api/v1/growth/size", "200"), ("PUT", "/api/v1/growth/BRZ/NGDP_R/2002", "400")]
    assert all(float(f["duration_ms"]) >= 0 and f["remote"] == "127.0.0.1" for f in fields)
