"""The connection served in process (gevent sockets, no process started): what a log line of a
request carries, and what a body's bytes earn against its minimum rate."""

import contextlib
import json
import logging
import sys
import time

import falcon
import gevent
import gevent.socket
import pytest

from growth_gevent.api.app import create_app
from growth_gevent.config import Config
from growth_gevent.core.logs import LogfmtFormatter, RequestIdFilter
from growth_gevent.http.clients import TrustedRouters
from growth_gevent.http.handler import SEND_BUFFER_BYTES, Connection
from growth_gevent.http.head import Framing
from growth_gevent.http.server import listen, make_server
from growth_gevent.testing import read_response
from tests.helpers.support import memory_store

ROUTER_ID = "7f1c4e0a-9b2d-4c1e-8f3a-2d6b5e9c0a11"


class Lines(logging.Handler):
    """The log lines of the ``growth_gevent`` loggers, formatted and filtered as configure_logging does."""

    def __init__(self):
        super().__init__()
        self.setFormatter(LogfmtFormatter())
        self.addFilter(RequestIdFilter())
        self.lines = []

    def emit(self, record):
        self.lines.append(self.format(record))


class Fails:
    def on_get(self, req, resp):
        raise RuntimeError("a bug")


def test_an_error_logged_while_serving_a_request_carries_its_request_id():
    app = falcon.App()
    app.add_route("/fails", Fails())
    config = Config(host="127.0.0.1", port=0)
    server = make_server(app, config, listen(config))
    server.start()
    lines = Lines()
    logger = logging.getLogger("growth_gevent")
    logger.addHandler(lines)
    try:
        answers = []
        for offered in (ROUTER_ID, None):
            sock = gevent.socket.create_connection(server.address[:2])
            sock.sendall(b"GET /fails HTTP/1.1\r\nHost: t\r\n"
                         + (b"X-Request-ID: %s\r\n" % offered.encode() if offered else b"") + b"\r\n")
            answers.append(read_response(sock))
            sock.close()
    finally:
        logger.removeHandler(lines)
        server.stop()
    assert [(status, headers["x-request-id"] == ROUTER_ID) for status, headers, _ in answers] == [
        (500, True), (500, False)]
    errors = [line for line in lines.lines if "level=error" in line and "RuntimeError: a bug" in line]
    assert [line.split(" ")[3] for line in errors] == [
        f"request_id={headers['x-request-id']}" for _, headers, _ in answers]


# Short, as the test waits them out: a server that gave no grace, or no more for the bytes, answers 12.5 ms
# early (one on time answers within ~2 ms of its deadline); one that capped nothing, 975 ms late.
GRACE = 0.025  # seconds
MIN_RATE = 8000  # bytes a second


@pytest.mark.parametrize("sent, earned, with_head", [
    (0, 0.0, False), (100, 100 / MIN_RATE, False), (100, 100 / MIN_RATE, True),
    (8000, GRACE, False), (8000, GRACE, True),  # a second earned, capped at twice the grace ahead
], ids=["nothing", "100 bytes", "100 bytes with the head", "a burst", "a burst with the head"])
def test_a_bodys_deadline_is_its_grace_and_a_second_per_min_rate_bytes_received(sent, earned, with_head):
    # A grace of 25 ms, then 8,000 bytes a second, at most 50 ms ahead: 100 bytes earn 12.5 ms more, whether
    # they came with the head (they earned nothing before) or after it; 8,000 bytes a second, capped to 25 ms.
    config = Config(host="127.0.0.1", port=0, body_grace=GRACE, body_min_rate=MIN_RATE)
    store = memory_store()
    server = make_server(create_app(store, config), config, listen(config))
    server.start()
    try:
        sock = gevent.socket.create_connection(server.address[:2])
        started = time.monotonic()
        head = (b"POST /api/v1/growth HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100000\r\n\r\n")
        sock.sendall(head + b" " * sent if with_head else head)
        polls_end = started + 5
        while not any(connection.reader.body_deadline is not None for connection in server.connections):
            assert time.monotonic() < polls_end
            gevent.sleep(0.001)  # a poll with a deadline; the server's greenlets run meanwhile
        if not with_head:
            sock.sendall(b" " * sent)
        status, headers, body = read_response(sock)
        answered = time.monotonic() - started
        sock.close()
    finally:
        server.stop()
        store.close()
    assert (status, headers["connection"], json.loads(body)) == (
        408, "close", {"msg": "request body not received in time"})
    assert GRACE + earned <= answered < GRACE + earned + 0.5


def test_an_answer_larger_than_the_send_buffer_reaches_a_client_that_reads_it_late_whole():
    # More than the send buffer and the client's receive buffer hold: the first send takes part of it,
    # the rest is sent as the client reads.
    body = bytes(range(256)) * (4 * SEND_BUFFER_BYTES // 256 + 1)

    def large(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return [body]

    config = Config(host="127.0.0.1", port=0)
    server = make_server(large, config, listen(config))
    server.start()
    try:
        sock = gevent.socket.create_connection(server.address[:2], timeout=5)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        sent_end = time.monotonic() + 5
        while not any(connection.exchange and connection.exchange.headers_sent for connection in server.connections):
            assert time.monotonic() < sent_end
            gevent.sleep(0.001)  # until the server has begun: its first send fills the buffers
        status, headers, received = read_response(sock)
        sock.close()
    finally:
        server.stop()
    assert (status, int(headers["content-length"]), received == body) == (200, len(body), True)


def read_answers(sock, count):
    """How many ``200``s came back, reading until ``count`` have (or the server closed)."""
    received = b""
    while received.count(b"HTTP/1.1 200 OK\r\n") < count:
        data = sock.recv(65536)
        if not data:
            break
        received += data
    return received.count(b"HTTP/1.1 200 OK\r\n")


PIPELINED_WORK = sys.getswitchinterval() * 10 / 1000


def test_a_client_that_pipelines_many_requests_does_not_hold_up_another_connection():
    # A thousand requests in one send: all of them wait in the server's read buffer, so reading the next would
    # never block. The other connection's one request, sent after them, is answered while they are. Each takes
    # PIPELINED_WORK of CPU, the thousand ten times gevent's switch interval (after which its loop polls the
    # sockets however many greenlets are runnable): on a fast machine, a server that yields would otherwise
    # finish them all before the loop saw the other request, as one that never yields does.
    served = []

    def app(environ, start_response):
        served.append(environ["PATH_INFO"])
        done = time.perf_counter() + PIPELINED_WORK
        while time.perf_counter() < done:
            pass
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]

    config = Config(host="127.0.0.1", port=0)
    server = make_server(app, config, listen(config))
    server.start()
    try:
        pipelining = gevent.socket.create_connection(server.address[:2], timeout=5)
        other = gevent.socket.create_connection(server.address[:2], timeout=5)
        drained = gevent.spawn(read_answers, pipelining, 1000)
        pipelining.sendall(b"GET /pipelined HTTP/1.1\r\nHost: t\r\n\r\n" * 1000)
        started_end = time.monotonic() + 5
        while not served:
            assert time.monotonic() < started_end
            gevent.sleep(0.001)  # until the server is answering them: a server that never yields has answered all
        other.sendall(b"GET /other HTTP/1.1\r\nHost: t\r\n\r\n")
        status, _, _ = read_response(other)
        assert drained.get(timeout=10) == 1000
        pipelining.close()
        other.close()
    finally:
        server.stop()
    assert status == 200
    assert served[-1] == "/pipelined"  # the other answered before the last of them (after all: no yield)


def test_the_environ_names_fields_as_cgi_does_and_drops_those_with_an_underscore():
    seen = {}

    def app(environ, start_response):
        seen.update((key, value) for key, value in environ.items() if key.startswith(("HTTP_", "CONTENT_")))
        start_response("200 OK", [("Content-Length", "0")])
        return []

    config = Config(host="127.0.0.1", port=0)
    server = make_server(app, config, listen(config))
    server.start()
    try:
        sock = gevent.socket.create_connection(server.address[:2], timeout=5)
        # X_Forwarded_For would be HTTP_X_FORWARDED_FOR too: a proxy's X-Forwarded-For could be spoofed by it.
        sock.sendall(b"GET / HTTP/1.1\r\nhost: t\r\nX_Forwarded_For: 6.6.6.6\r\nX-Forwarded-For: 1.2.3.4\r\n"
                     b"cookie: a=1\r\nCookie: b=2\r\nx-custom: 1\r\nX-CUSTOM: 2\r\ncontent-type: text/plain\r\n"
                     b"Content-Length: 0\r\n\r\n")
        status, _, _ = read_response(sock)
        sock.close()
    finally:
        server.stop()
    assert status == 200
    assert seen == {"HTTP_HOST": "t", "HTTP_X_FORWARDED_FOR": "1.2.3.4", "HTTP_COOKIE": "a=1; b=2",
                    "HTTP_X_CUSTOM": "1,2", "CONTENT_TYPE": "text/plain", "CONTENT_LENGTH": "0"}


@pytest.mark.parametrize("allowed, peer_is_router", [("127.0.0.1", True), ("10.0.0.0/8", False)])
def test_behind_a_trusted_router_remote_addr_is_the_client_it_forwards_request_by_request(allowed, peer_is_router):
    seen = []

    def app(environ, start_response):
        seen.append(environ["REMOTE_ADDR"])
        start_response("200 OK", [("Content-Length", "0")])
        return []

    config = Config(host="127.0.0.1", port=0, forwarded_allow_ips=TrustedRouters.parse(allowed))
    server = make_server(app, config, listen(config))
    server.start()
    try:
        sock = gevent.socket.create_connection(server.address[:2], timeout=5)
        for forwarded in (b"X-Forwarded-For: 192.0.2.1, 198.51.100.7\r\n", b"", b"X-Forwarded-For: 2001:db8::1\r\n"):
            sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n" + forwarded + b"\r\n")
            assert read_response(sock)[0] == 200
        sock.close()
    finally:
        server.stop()
    # One keep-alive connection: a request without the header is the router's own, not the last client's.
    assert seen == (["198.51.100.7", "127.0.0.1", "2001:db8::1"] if peer_is_router else ["127.0.0.1"] * 3)


@pytest.mark.parametrize("min_rate", [0, MIN_RATE], ids=["no-min-rate", "min-rate"])
@pytest.mark.parametrize("sent, framing, arrived", [
    (b'{"value": 1}GET / HTTP/1.1', Framing(12, False, "t"), 12),  # what follows is the next request's
    (b'{"value":', Framing(12, False, "t"), 9),
    (b"", Framing(12, False, "t"), 0),
    (b"", Framing(None, False, "t"), 0),
], ids=["whole", "partly", "nothing-yet", "no-body"])
def test_the_body_bytes_that_came_with_the_head_are_counted_without_waiting(min_rate, sent, framing, arrived):
    """What a body's read at once (``SizedBody.read_arrived``) relies on, whatever the minimum rate."""
    with head_read(Config(host="127.0.0.1", port=0, body_grace=GRACE, body_min_rate=min_rate), sent) as connection:
        started = time.monotonic()
        assert connection.reader.start_body(connection.rfile, framing) == arrived
        assert time.monotonic() - started < GRACE  # it waited for no byte


def test_the_bytes_that_came_with_the_head_earn_no_deadline_past_the_bodys_timeout():
    # A grace of 20 s gives a credit of 40 s ahead, past the 30 s the whole body may take: 100 bytes at a byte a
    # second earn up to that timeout, not to the credit.
    config = Config(host="127.0.0.1", port=0, body_grace=20, body_min_rate=1, body_timeout=30)
    with head_read(config, b" " * 100) as connection:
        assert connection.reader.start_body(connection.rfile, Framing(100, False, "t")) == 100
        assert connection.reader.deadline == connection.reader.body_deadline


@contextlib.contextmanager
def head_read(config, sent):
    """A connection of a server of ``config`` whose request head has been read, ``sent`` the bytes that came
    with it."""
    server = make_server(falcon.App(), config, listen(config))
    ours, theirs = gevent.socket.socketpair()
    try:
        connection = Connection(ours, ("127.0.0.1", 1), server)
        connection.reader.wait(5)
        theirs.sendall(b"PUT / HTTP/1.1\r\n\r\n" + sent)
        connection.rfile.read(len(b"PUT / HTTP/1.1\r\n\r\n"))  # the head, as parse_head takes it
        yield connection
    finally:
        ours.close()
        theirs.close()
        server.close()
