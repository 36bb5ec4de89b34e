"""A handful of clients that hold all the body budget they may, against a live server (issue 42, item 5): five
addresses, or four clients behind a trusted router, send bodies up to their shares and then nothing, and
another client's PUT and one-record POST still answer 2xx. Each client takes a share of what the others
leave (api/body_budget.py); where a fixed quarter let four fill a budget, every case here was 503 for the
other client. The clients are loopback addresses (Linux routes all of 127/8 to the loopback), the router
127.0.0.1 with FORWARDED_ALLOW_IPS."""

import json
import socket

import pytest

from growth_gevent.testing import read_response, wait_for
from tests.helpers.raw_http import HOST, JSON, unanswered

KiB = 1024
# 1 MiB of bodies: 960 KiB for bulk bodies and 64 KiB for PUT bodies, a quarter of each for the first client.
ENV = {"GROWTH_BODY_BUFFER_BYTES": str(1024 * KiB)}
ADDRESSES = [f"127.0.0.{last}" for last in range(2, 7)]
ROUTER_ENV = {**ENV, "FORWARDED_ALLOW_IPS": "127.0.0.1"}
FORWARDED = [f"198.51.100.{last}" for last in range(1, 5)]
# A PUT body of A/B may be 1,030 bytes: each sends 1,024 of 1,025, 16 of them a quarter of the PUT bodies' part.
PUT_PATH, PUT_SENT = b"/api/v1/growth/A/B/1", 1024
# Bulk bodies of 120 KiB sent, two of them a quarter of the bulk bodies' part.
BULK_SENT = 120 * KiB
PER_CLIENT = 20  # more than any client's share holds
CLIENT_BODIES = {"msg": "too many request bodies in memory from this client address; retry later"}
ROUNDS = 10
ONE_RECORD = json.dumps([{"Country": "C", "Indicator": "NGDP_R", "Value": 1.5, "Year": 2000}]).encode()


def hold(port, address, target, sent, forwarded_for=None):
    """A connection from ``address`` whose request declares a byte more than ``sent`` and sends ``sent``."""
    sock = socket.socket()
    sock.settimeout(10)
    sock.bind((address, 0))
    sock.connect(("127.0.0.1", port))
    method = b"PUT " if target == PUT_PATH else b"POST "
    lines = [HOST, JSON, b"Content-Length: %d" % (sent + 1)]
    if forwarded_for:
        lines.append(b"X-Forwarded-For: " + forwarded_for.encode())
    sock.sendall(method + target + b" HTTP/1.1\r\n" + b"".join(line + b"\r\n" for line in lines) + b"\r\n"
                 + b"[" + b" " * (sent - 1))
    return sock


class Holders:
    """PER_CLIENT held bodies for each client (an address, and the address its router forwards or None),
    until every client's share is full: one of its bodies refused."""

    def __init__(self, port, clients, target, sent):
        self.sockets = {(address, forwarded): [hold(port, address, target, sent, forwarded) for _ in range(PER_CLIENT)]
                        for address, forwarded in clients}

    def __enter__(self):
        refused = wait_for(lambda: all(not all(map(unanswered, held)) for held in self.sockets.values()) and [
            next(sock for sock in held if not unanswered(sock)) for held in self.sockets.values()], timeout=20)
        for sock in refused:
            status, _, body = read_response(sock)
            assert (status, json.loads(body)) == (503, CLIENT_BODIES)
        return self

    def __exit__(self, *exc_info):
        for held in self.sockets.values():
            for sock in held:
                sock.close()

    def still_held(self):
        return sum(map(unanswered, (sock for held in self.sockets.values() for sock in held)))


def assert_another_client_writes(server, headers=None):
    headers = {"Content-Type": "application/json", **(headers or {})}
    for _ in range(ROUNDS):
        put = server.request("PUT", "/api/v1/growth/BRZ/NGDP_R/2002", b'{"value": 1.5}', headers)
        post = server.request("POST", "/api/v1/growth", ONE_RECORD, headers)
        assert (put[0], post[0]) in ((201, 202), (200, 202)), (put, post)


@pytest.mark.parametrize("server", [ENV], indirect=True)
@pytest.mark.parametrize("target, sent, part", [(PUT_PATH, PUT_SENT, 64 * KiB),
                                                (b"/api/v1/growth", BULK_SENT, 960 * KiB)], ids=["put", "bulk"])
def test_five_addresses_that_hold_their_shares_leave_another_clients_writes_answered(server, target, sent, part):
    with Holders(server.port, [(address, None) for address in ADDRESSES], target, sent) as holders:
        # Each holds a share of what the others left: five leave a quarter of the part, 1 - (3/4)**5 held.
        # Polled: a body not read yet counts as held until the server refuses it.
        wait_for(lambda: holders.still_held() * sent <= (1 - 0.75 ** 5) * part, timeout=20)
        assert_another_client_writes(server)


@pytest.mark.parametrize("server", [ROUTER_ENV], indirect=True)
def test_four_clients_behind_a_trusted_router_hold_their_shares_and_another_one_writes(server):
    # Every connection is the router's, 127.0.0.1, as the other client's is.
    with Holders(server.port, [("127.0.0.1", forwarded) for forwarded in FORWARDED], b"/api/v1/growth", BULK_SENT):
        assert_another_client_writes(server, {"X-Forwarded-For": "203.0.113.9"})


@pytest.mark.parametrize("server", [ROUTER_ENV], indirect=True)
def test_from_an_untrusted_address_the_forwarded_header_is_ignored(server):
    # Each of 127.0.0.2's bodies names another client: they are all 127.0.0.2's, and its share is full at two.
    sockets = [hold(server.port, "127.0.0.2", b"/api/v1/growth", BULK_SENT, f"198.51.100.{last}")
               for last in range(1, 5)]
    refused = wait_for(lambda: [sock for sock in sockets if not unanswered(sock)], timeout=20)
    status, _, body = read_response(refused[0])
    assert (status, json.loads(body)) == (503, CLIENT_BODIES)
    for sock in sockets:
        sock.close()


@pytest.mark.parametrize("server", [{**ROUTER_ENV, "GROWTH_ACCESS_LOG": "on"}], indirect=True)
def test_the_access_log_names_the_client_the_trusted_router_forwards(server):
    server.request("GET", "/ping", headers={"X-Forwarded-For": "192.0.2.1, 198.51.100.7"})
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10, source_address=("127.0.0.2", 0))
    sock.sendall(b"GET /ping HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 198.51.100.8\r\n\r\n")
    assert read_response(sock)[0] == 200
    sock.close()
    remotes = [server.wait_for_line(r"logger=growth_gevent.access .*remote=(\S+)", 10).group(1) for _ in range(2)]
    assert remotes == ["198.51.100.7", "127.0.0.2"]


@pytest.mark.parametrize("server", [ROUTER_ENV], indirect=True)
def test_a_client_a_router_forwards_with_its_port_is_one_client_whatever_the_port(server):
    # Azure's router appends IPv4:port: a client opening connections from new ports holds one share, not one a
    # port, and another client behind the router, named with its port too, still writes.
    sockets = [hold(server.port, "127.0.0.1", b"/api/v1/growth", BULK_SENT, f"198.51.100.1:{40000 + port}")
               for port in range(4)]
    refused = wait_for(lambda: [sock for sock in sockets if not unanswered(sock)], timeout=20)
    status, _, body = read_response(refused[0])
    assert (status, json.loads(body)) == (503, CLIENT_BODIES)
    assert_another_client_writes(server, {"X-Forwarded-For": "203.0.113.9:443"})
    for sock in sockets:
        sock.close()
