"""nosniff on the wire: a head the server refuses itself, a body the app cannot read, an answer served."""

from growth_gevent.testing import read_response
from tests.helpers.raw_http import HOST, JSON, post_head


def test_the_servers_own_answers_say_nosniff(server):
    answers = {}
    for name, request in {
        "refused head": post_head(HOST, JSON, b"Content-Length: 2", b"Content-Length: 2") + b"[]",
        "unreadable body": post_head(HOST, JSON, b"Transfer-Encoding: chunked") + b"zz\r\n[]\r\n0\r\n\r\n",
        "served": b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n",
    }.items():
        sock = server.socket()
        sock.sendall(request)
        status, headers, _ = read_response(sock)
        sock.close()
        answers[name] = (status, headers.get("x-content-type-options"))
    assert answers == {"refused head": (400, "nosniff"), "unreadable body": (400, "nosniff"),
                       "served": (200, "nosniff")}
