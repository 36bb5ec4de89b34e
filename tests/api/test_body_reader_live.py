"""A gzipped body against a live server's socket (issue 37): a bulk POST sent with ``Content-Encoding: gzip``
(as ``curl --data-binary @file.gz`` sends one) is loaded, Content-Length or chunked; a gzip bomb is a 413 at the
limit, never the memory it would inflate to; any other coding is a 415 that says what is decoded."""

import gzip
import json
import socket

import pytest

from growth_gevent.testing import read_response
from tests.helpers.raw_http import HOST, JSON, post_head
from tests.helpers.support import SAMPLE

MiB = 1024 * 1024
# 256 MiB of spaces inside a JSON array, gzipped to 256 kB: 32 times the limit.
BOMB_MIB = 256
# Measured: the process's peak grows by 8.4 MiB reading the bomb up to the 8 MiB limit; inflated whole, 256 MiB.
RSS_GROWTH_MIB = 64


def peak_rss_mib(pid):
    """The most the process has held resident so far (VmHWM)."""
    with open(f"/proc/{pid}/status") as status:
        kib = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    return int(kib) / 1024


def send(server, head_lines, body, chunked=False):
    """The (status, headers, document) a raw POST of ``body`` gets: Content-Length, or one chunk a 64 KiB."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        if chunked:
            framed = b"".join(b"%x\r\n%s\r\n" % (len(body[at:at + 65536]), body[at:at + 65536])
                              for at in range(0, len(body), 65536)) + b"0\r\n\r\n"
            sock.sendall(post_head(HOST, *head_lines, b"Transfer-Encoding: chunked") + framed)
        else:
            sock.sendall(post_head(HOST, *head_lines, b"Content-Length: %d" % len(body)) + body)
        status, headers, answer = read_response(sock)
    return status, headers, json.loads(answer)


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_gzipped_bulk_post_is_loaded(server, chunked):
    records = json.loads(SAMPLE.read_bytes())
    status, _, answer = send(server, [JSON, b"Content-Encoding: gzip"], gzip.compress(SAMPLE.read_bytes()), chunked)
    assert (status, answer) == (202, {"msg": "In progress"})
    server.wait_until_complete()
    assert server.request_json("GET", "/api/v1/growth/size")[1] == {"size": len(records)}


@pytest.mark.serial  # the server's RSS
def test_a_gzip_bomb_is_413_at_the_limit_and_never_inflated(server):
    bomb = gzip.compress(b"[" + b" " * (BOMB_MIB * MiB) + b"]", compresslevel=9)
    before = peak_rss_mib(server.process.pid)
    try:
        status, headers, answer = send(server, [JSON, b"Content-Encoding: gzip"], bomb)
    except ConnectionResetError:  # the server answered and closed before the whole bomb was sent
        pytest.fail("the server reset the connection instead of a lingering close")
    assert (status, headers["connection"], answer) == (
        413, "close", {"msg": "request body is larger than 8388608 bytes once inflated"})
    assert peak_rss_mib(server.process.pid) - before < RSS_GROWTH_MIB


def test_any_other_content_encoding_is_415_saying_what_is_decoded(server):
    status, headers, answer = send(server, [JSON, b"Content-Encoding: br"], b"\x0b\x02\x80[]\x03")
    assert (status, headers["accept-encoding"], answer) == (
        415, "gzip", {"msg": "Content-Encoding 'br' is not decoded here: send gzip, or no Content-Encoding"})
    assert server.request_json("GET", "/api/v1/growth/post/status")[1]["jobs accepted"] == 0
