"""What tests/api/test_auth.py tests, where it takes a process (a server, redis-server); the names these tests
share with those in process come from tests/api/test_auth.py."""

import json

import pytest

from growth_gevent.testing import read_response
from tests.helpers.api import MISSING, RECORD_URL, TOKEN, bearer

WITH_TOKENS = {"GROWTH_API_TOKENS": TOKEN}


@pytest.mark.parametrize("live", [WITH_TOKENS], indirect=True)
def test_a_live_server_refuses_writes_without_the_token_and_takes_them_with_it(live):
    body = json.dumps({"value": 2.5}).encode()
    for headers in ({}, bearer("not-the-token-at-all")):
        connection = live.connection()
        connection.request("PUT", RECORD_URL, body, {"Content-Type": "application/json", **headers})
        response = connection.getresponse()
        assert response.status == 401
        assert response.getheader("WWW-Authenticate").startswith(MISSING)
        assert json.loads(response.read())["msg"]
        connection.close()
    assert live.request("GET", RECORD_URL)[0] == 404
    status, data = live.request("PUT", RECORD_URL, body, {"Content-Type": "application/json", **bearer(TOKEN)})
    assert (status, json.loads(data)["Value"]) == (201, 2.5)
    assert live.request("GET", RECORD_URL)[0] == 200


@pytest.mark.parametrize("live", [WITH_TOKENS], indirect=True)
def test_a_refused_write_is_answered_without_reading_its_body_and_closes(live):
    with live.socket() as sock:
        # The body is announced but never sent: the 401 comes at once.
        sock.sendall(b"POST /api/v1/growth HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000000\r\n\r\n")
        status, headers, body = read_response(sock)
    assert status == 401
    assert headers["connection"] == "close"
    assert headers["www-authenticate"] == MISSING
    assert json.loads(body) == {"msg": "this write needs a token: Authorization: Bearer <token>"}
    assert live.request_json("GET", "/api/v1/growth/post/status")[1]["jobs accepted"] == 0


def test_a_server_on_every_interface_without_tokens_warns_once(servers):
    server = servers(HOST="0.0.0.0")
    server.read_available_lines()
    warnings = [line for line in server.lines if "GROWTH_API_TOKENS is not set" in line]
    assert len(warnings) == 1, server.lines
    assert "level=warning" in warnings[0]


def test_a_server_with_tokens_on_every_interface_does_not_warn(servers):
    server = servers(HOST="0.0.0.0", GROWTH_API_TOKENS=TOKEN)
    server.read_available_lines()
    assert not [line for line in server.lines if "GROWTH_API_TOKENS" in line], server.lines
