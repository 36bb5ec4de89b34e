"""Hostile and careless clients against a real server process: framing, deadlines, body limits, request ids
(connections, slow readers and stops: tests/http/test_server_connections_live.py)."""

import http.client
import json
import re
import socket
import time
import urllib.error
import urllib.request

import pytest

from growth_gevent.testing import closed_by_peer, read_response, wait_for
from tests.helpers.raw_http import HOST, JSON, RECORD, post_head, put_record
from tests.http.test_head import INVALID as INVALID_HEADS
from tests.http.test_head import INVALID_MAX_HEADER_BYTES

SMUGGLED = b"DELETE " + RECORD.encode() + b" HTTP/1.1\r\nHost: t\r\n\r\n"


def test_ambiguous_framing_is_a_400_and_a_closed_connection(server):
    # One shape proves the wiring; tests/http/test_head.py holds the rules, each shape of tests/http/requests/.
    put_record(server)
    sock = server.socket()
    sock.sendall(post_head(HOST, JSON, b"Content-Length: 2", b"Content-Length: 2") + b"[]" + SMUGGLED)
    status, headers, body = read_response(sock)
    assert (status, headers["content-type"], headers["connection"]) == (400, "application/json", "close")
    assert json.loads(body) == {"msg": "more than one Content-Length"}
    assert wait_for(lambda: closed_by_peer(sock))
    assert server.request("GET", RECORD)[0] == 200  # the smuggled DELETE never ran
    server.read_available_lines()
    assert not [line for line in server.lines if "Traceback" in line]


def test_a_content_length_past_ints_digit_limit_is_a_400_and_zero_padding_is_read(server):
    # int() refuses more than 4,300 digits: such a length once killed the request's greenlet, unanswered.
    sock = server.socket()
    sock.sendall(b"PUT " + RECORD.encode() + b" HTTP/1.1\r\nHost: t\r\n" + JSON + b"\r\nContent-Length: "
                 + b"9" * 5000 + b"\r\n\r\n")
    status, headers, body = read_response(sock)
    assert (status, headers["connection"]) == (400, "close")
    assert json.loads(body) == {"msg": "Content-Length is too large"}
    assert wait_for(lambda: closed_by_peer(sock))
    padded = server.socket()
    padded.sendall(b"PUT " + RECORD.encode() + b" HTTP/1.1\r\nHost: t\r\n" + JSON + b"\r\nContent-Length: "
                   + b"0" * 5000 + b"14\r\n\r\n" + b'{"value": 7.5}')
    assert read_response(padded)[0] in (200, 201)
    assert server.request("GET", RECORD) == (200, b'{"Country":"BRZ","Indicator":"NGDP_R","Value":7.5,"Year":2002}')
    server.read_available_lines()
    assert not [line for line in server.lines if "Traceback" in line]


@pytest.mark.parametrize("server", [{"GROWTH_MAX_HEADER_BYTES": "2048"}], indirect=True)
def test_a_header_block_over_the_limit_is_a_431(server):
    sock = server.socket()
    sock.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 3000 + b"\r\n\r\n")
    status, headers, body = read_response(sock)
    assert (status, headers["connection"]) == (431, "close")
    assert json.loads(body) == {"msg": "request header block is too large"}
    assert wait_for(lambda: closed_by_peer(sock))


@pytest.mark.serial  # 300 connections; the slowest /ping under 0.5 s
@pytest.mark.parametrize("server", [{"GROWTH_HEADER_TIMEOUT": "1"}], indirect=True)
def test_slowloris_connections_are_cut_at_the_header_deadline_and_others_are_served(server):
    slow = [server.socket() for _ in range(300)]
    for sock in slow:
        sock.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\n")
    started = time.monotonic()
    worst = 0.0
    cut = set()
    while len(cut) < len(slow):
        assert time.monotonic() - started < 10, f"{len(cut)} of {len(slow)} cut after 10 s"
        before = time.monotonic()
        assert server.request("GET", "/ping") == (200, b"pong")
        worst = max(worst, time.monotonic() - before)
        for index, sock in enumerate(slow):  # one more header byte each, as slowloris does
            if index not in cut:
                try:
                    sock.sendall(b"X")
                except OSError:
                    cut.add(index)
                    continue
                sock.setblocking(False)
                try:
                    if sock.recv(4096, socket.MSG_PEEK):
                        cut.add(index)
                except BlockingIOError:
                    pass
                except OSError:
                    cut.add(index)
                sock.setblocking(True)
    assert worst < 0.5
    assert time.monotonic() - started < 5
    sock = slow[0]
    sock.settimeout(5)
    status, _, body = read_response(sock)
    assert (status, json.loads(body)) == (408, {"msg": "request headers not received in time"})


@pytest.mark.parametrize("server", [{"GROWTH_BODY_TIMEOUT": "1"}], indirect=True)
def test_a_stalled_body_is_cut_at_the_body_deadline(server):
    sock = server.socket()
    started = time.monotonic()
    sock.sendall(post_head(HOST, JSON, b"Content-Length: 100000") + b"[" + b" " * 5000)
    status, headers, body = read_response(sock)
    assert (status, headers["connection"], json.loads(body)) == (
        408, "close", {"msg": "request body not received in time"})
    assert 1 <= time.monotonic() - started < 4
    assert wait_for(lambda: closed_by_peer(sock))


@pytest.mark.parametrize("server", [{"GROWTH_KEEPALIVE_TIMEOUT": "0.5", "GROWTH_HEADER_TIMEOUT": "1"}], indirect=True)
def test_idle_connections_are_closed_after_their_timeout(server):
    kept = server.connection()
    started = time.monotonic()  # before the server's idle deadline starts: the bound below is a lower one
    kept.request("GET", "/ping")
    kept.getresponse().read()
    silent = server.socket()
    assert wait_for(lambda: closed_by_peer(kept.sock), timeout=5)
    assert 0.5 <= time.monotonic() - started < 2
    assert wait_for(lambda: closed_by_peer(silent), timeout=5)
    assert 1 <= time.monotonic() - started < 3


def test_keep_alive_responses_say_how_long_the_connection_is_kept(server):
    connection = server.connection()
    connection.request("GET", "/ping")
    response = connection.getresponse()
    assert (response.read(), response.getheader("Keep-Alive"), response.getheader("Connection")) == (
        b"pong", "timeout=95", None)
    connection.request("GET", "/ping", headers={"Connection": "close"})
    assert connection.getresponse().getheader("Keep-Alive") is None
    sock = server.socket()
    sock.sendall(b"GET /ping HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    status, headers, _ = read_response(sock)
    assert (status, headers["connection"], headers["keep-alive"]) == (200, "keep-alive", "timeout=95")


TOO_LARGE = {"GROWTH_MAX_BODY_BYTES": str(1024 * 1024)}
BIG_BODY = b"[" + b" " * (4 * 1024 * 1024) + b"]"


@pytest.mark.parametrize("server", [TOO_LARGE], indirect=True)
def test_urllib_reads_the_413_of_a_body_refused_before_it_is_read(server):
    for _ in range(5):
        request = urllib.request.Request(f"http://127.0.0.1:{server.port}/api/v1/growth", data=BIG_BODY,
                                         headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 413
        assert json.loads(refused.value.read()) == {"msg": "request body is larger than 1048576 bytes"}


@pytest.mark.parametrize("server", [TOO_LARGE], indirect=True)
@pytest.mark.parametrize("content_type", ["application/json", "text/plain"])
def test_http_client_reads_an_early_answer_after_sending_its_whole_body(server, content_type):
    for _ in range(5):
        connection = server.connection()
        connection.request("POST", "/api/v1/growth", body=BIG_BODY, headers={"Content-Type": content_type})
        response = connection.getresponse()
        assert response.status == (413 if content_type == "application/json" else 415)
        assert response.getheader("Connection") == "close"
        assert set(json.loads(response.read())) == {"msg"}
        connection.close()


@pytest.mark.parametrize("server", [TOO_LARGE], indirect=True)
def test_an_early_answer_to_expect_100_continue_closes_so_the_next_request_is_not_eaten(server):
    sock = server.socket()
    sock.sendall(post_head(HOST, JSON, b"Expect: 100-continue", b"Content-Length: 2000000"))
    status, headers, _ = read_response(sock)
    assert (status, headers["connection"]) == (413, "close")
    sock.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
    assert wait_for(lambda: closed_by_peer(sock))


ROUTER_ID = "7f1c4e0a-9b2d-4c1e-8f3a-2d6b5e9c0a11"  # a Heroku router's X-Request-ID is a UUID


def get_ping(sock, *headers):
    sock.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n")
    return read_response(sock)


@pytest.mark.parametrize("server", [{"GROWTH_ACCESS_LOG": "on"}], indirect=True)
def test_x_request_id_is_echoed_or_made_returned_and_logged(server):
    sock = server.socket()
    assert get_ping(sock, b"X-Request-ID: " + ROUTER_ID.encode())[1]["x-request-id"] == ROUTER_ID
    made = get_ping(sock)[1]["x-request-id"]
    assert re.fullmatch("[0-9a-f]{32}", made)
    for invalid in [b"short", b"x" * 201, b"a space in an id of twenty", b"quote\"in-an-id-of-twenty",
                    b"caf\xe9-in-an-id-of-twenty-chars"]:
        replaced = get_ping(sock, b"X-Request-ID: " + invalid)[1]["x-request-id"]
        assert re.fullmatch("[0-9a-f]{32}", replaced) and replaced != made
    two = get_ping(sock, b"X-Request-ID: " + ROUTER_ID.encode(), b"X-Request-ID: " + ROUTER_ID.encode())
    assert two[1]["x-request-id"] != ROUTER_ID  # which one? neither: a new one
    assert server.wait_for_line(f"logger=growth_gevent.access request_id={ROUTER_ID} method=GET path=/ping ", 5)
    assert server.wait_for_line(f"logger=growth_gevent.access request_id={made} method=GET path=/ping ", 5)
    refused = server.socket()  # a request refused before the app: its answer and its log line share one id
    refused.sendall(post_head(HOST, b"X-Request-ID: " + ROUTER_ID.encode(), b"Content-Length: 2",
                              b"Content-Length: 2") + b"[]")
    status, headers, _ = read_response(refused)
    assert status == 400 and re.fullmatch("[0-9a-f]{32}", headers["x-request-id"])
    assert server.wait_for_line(f"logger=growth_gevent.http request_id={headers['x-request-id']} "
                                f"msg=\"bad request from 127.0.0.1: more than one Content-Length\"", 5)


@pytest.mark.parametrize("server", [{"GROWTH_MAX_BODY_BYTES": "1000", "GROWTH_BODY_TIMEOUT": "5"}], indirect=True)
@pytest.mark.parametrize("size", [b"FFFFFFFFFFFFFFFF", b"3E9"], ids=["2**64-1", "1001"])
def test_a_chunk_larger_than_any_body_is_a_413_at_once(server, size):
    sock = server.socket()
    started = time.monotonic()
    sock.sendall(post_head(HOST, JSON, b"Transfer-Encoding: chunked") + size + b"\r\n[")
    status, headers, body = read_response(sock)
    assert (status, headers["connection"], json.loads(body)) == (
        413, "close", {"msg": "request body is larger than 1000 bytes"})
    assert time.monotonic() - started < 1
    assert wait_for(lambda: closed_by_peer(sock))


def read_to_end(sock):
    """Everything the server sends until it closes the connection."""
    received = b""
    while True:
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            return received
        if not data:
            return received
        received += data


@pytest.mark.parametrize("server", [{"GROWTH_MAX_HEADER_BYTES": str(INVALID_MAX_HEADER_BYTES)}], indirect=True)
def test_the_server_answers_every_invalid_head_of_the_corpus_as_the_parser_refuses_it(server):
    put_record(server)
    raws = [(case.id, case.values[0], case.values[1]["status"]) for case in INVALID_HEADS]
    for name, raw, status in [*raws, ("garbage", b"\x00\x01\x02\r\n\r\n", 400)]:
        sock = server.socket()
        sock.sendall(raw)
        sock.shutdown(socket.SHUT_WR)
        answer = read_to_end(sock)
        assert answer.startswith(b"HTTP/1.1 %d " % status), (name, answer[:100])
        assert b"\r\nConnection: close\r\n" in answer, name
        sock.close()
    assert server.request("GET", RECORD)[0] == 200  # no smuggled DELETE ran
    sock = server.socket()
    sock.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n" * 3)
    sock.shutdown(socket.SHUT_WR)
    assert read_to_end(sock).count(b"HTTP/1.1 200 OK") == 3
    server.read_available_lines()
    assert not [line for line in server.lines if "Traceback" in line], server.lines


def test_http_client_keep_alive_survives_many_requests(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    for _ in range(200):
        connection.request("GET", "/api/v1/growth/size")
        assert connection.getresponse().read() == b'{"size":0}'
    connection.close()
