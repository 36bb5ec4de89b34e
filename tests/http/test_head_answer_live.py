"""HEAD over a real socket answers with GET's headers (RFC 9110 §9.3.2): the true Content-Length where GET sends
one, none where GET streams chunked (the export said ``Content-Length: 0``), and the connection goes on."""

import pytest

from tests.helpers.support import serving_sample

# Set per answer, not by the representation.
PER_ANSWER = {"date", "x-request-id", "keep-alive", "transfer-encoding", "content-length"}
GZIP = {"Accept-Encoding": "gzip"}


@pytest.fixture(scope="module")
def live_server():
    with serving_sample() as server:
        yield server


def ask(connection, method, path, headers):
    connection.request(method, path, headers=headers)
    response = connection.getresponse()
    body = response.read()
    return response, {name.lower(): value for name, value in response.getheaders()}, body


def both(server, path, headers=None):
    """GET then HEAD of ``path`` on one keep-alive connection, then a GET that shows it still in step."""
    connection = server.connection()
    try:
        get = ask(connection, "GET", path, headers or {})
        head = ask(connection, "HEAD", path, headers or {})
        after, _, pong = ask(connection, "GET", "/ping", {})
        assert (after.status, pong) == (200, b"pong")
        return get, head
    finally:
        connection.close()


def same_representation(get_headers, head_headers):
    return ({name: value for name, value in get_headers.items() if name not in PER_ANSWER}
            == {name: value for name, value in head_headers.items() if name not in PER_ANSWER})


@pytest.mark.parametrize("path, headers", [
    ("/api/v1/growth/export", {}), ("/api/v1/growth/export?format=csv", {}),
    ("/api/v1/growth/export?format=ndjson", {}), ("/api/v1/growth/export", GZIP)])
def test_head_of_a_streamed_answer_has_no_length(live_server, path, headers):
    (get, get_headers, body), (head, head_headers, nothing) = both(live_server, path, headers)
    assert get.status == head.status == 200
    assert get_headers["transfer-encoding"] == "chunked" and "content-length" not in get_headers
    assert "content-length" not in head_headers, head_headers
    assert nothing == b"" and body
    assert same_representation(get_headers, head_headers)


@pytest.mark.parametrize("path, headers", [
    ("/api/v1/growth/BRZ/NGDP_R/2002", {}), ("/api/v1/growth?format=csv", {}), ("/openapi.json", GZIP),
    ("/docs/swagger-ui.css", GZIP), ("/api/v1/growth/BRZ/NGDP_R/1999", {}), ("/api/v1/growth?limit=0", {})])
def test_head_of_a_whole_answer_has_its_true_length(live_server, path, headers):
    (get, get_headers, body), (head, head_headers, nothing) = both(live_server, path, headers)
    assert get.status == head.status
    assert head_headers["content-length"] == get_headers["content-length"] == str(len(body))
    assert nothing == b""
    assert same_representation(get_headers, head_headers)
