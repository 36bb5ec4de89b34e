"""The body budget against a live server's socket (issue 34, item 3): hundreds of bulk uploads that obey the
minimum rate, from one client address, hold that address's share of the budget and no more, so that another
client's PUT and small bulk POST still answer 2xx, and the server's memory stays bounded."""

import json
import socket

import pytest

from growth_gevent.testing import read_response, wait_for
from tests.helpers.raw_http import HOST, JSON, Trickle, post_head, unanswered

MiB = 1024 * 1024
# Linux routes all of 127/8 to the loopback: the attacker connects from an address of its own.
ATTACKER = "127.0.0.2"
UPLOADS = 300
DECLARED = 2 * MiB  # GROWTH_MAX_BODY_BYTES below: the largest body a client may declare
FIRST_BYTES = 32 * 1024
# Then the minimum rate (GROWTH_BODY_MIN_RATE, 500 bytes a second), a packet each second.
TRICKLE, TRICKLE_SECONDS = b" " * 500, 1.0
# A budget of 16 MiB, which 256 uploads charged 64 KiB each (a read reserved ahead) filled: 15 MiB for bulk
# bodies, 3.75 MiB of them (120 of these uploads) for one address.
ENV = {"GROWTH_BODY_BUFFER_BYTES": str(16 * MiB), "GROWTH_MAX_BODY_BYTES": str(DECLARED)}
ROUNDS = 20
# Measured: the process grew by 27 MiB while the 300 uploads arrived and the writes were answered, ~90 KiB a
# connection (its read buffer, its greenlet, what it sent), the 119 held ones holding 3.7 MiB of bodies. A
# bound, not a margin: twice that would mean a connection holds far more than it sent.
RSS_GROWTH_MIB = 64
SMALL_BULK = json.dumps([{"Country": f"C{index}", "Indicator": "NGDP_R", "Value": 1.5, "Year": 2000 + index}
                         for index in range(10)]).encode()
CLIENT_BODIES = {"msg": "too many request bodies in memory from this client address; retry later"}


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        kib = next(line.split()[1] for line in status if line.startswith("VmRSS:"))
    return int(kib) / 1024


def slow_upload(port):
    sock = socket.socket()
    sock.settimeout(10)
    sock.bind((ATTACKER, 0))
    sock.connect(("127.0.0.1", port))
    sock.sendall(post_head(HOST, JSON, b"Content-Length: %d" % DECLARED) + b"[" + b" " * (FIRST_BYTES - 1))
    return sock


@pytest.mark.serial  # the RSS of 300 connections
@pytest.mark.parametrize("server", [ENV], indirect=True)
def test_slow_uploads_from_one_address_leave_another_clients_writes_answered(server):
    before = rss_mib(server.process.pid)
    uploads = [slow_upload(server.port) for _ in range(UPLOADS)]
    try:
        with Trickle(uploads, TRICKLE, TRICKLE_SECONDS):
            # The attacker's share is full once the server refuses its uploads past it.
            refused = wait_for(lambda: [sock for sock in uploads if not unanswered(sock)], timeout=30)
            for _ in range(ROUNDS):
                put = server.request("PUT", "/api/v1/growth/BRZ/NGDP_R/2002", b'{"value": 1.5}',
                                     {"Content-Type": "application/json"})
                post = server.request("POST", "/api/v1/growth", SMALL_BULK, {"Content-Type": "application/json"})
                assert (put[0], post[0]) in ((201, 202), (200, 202)), (put, post)
            status, _, body = read_response(refused[0])
            assert (status, json.loads(body)) == (503, CLIENT_BODIES)
            held = [sock for sock in uploads if unanswered(sock)]
            # 3.75 MiB holds 120 of 32 KiB; what trickles since (500 B/s each) refuses a couple more a second.
            assert 50 <= len(held) <= 120
            grown = rss_mib(server.process.pid) - before
    finally:
        for sock in uploads:
            sock.close()
    assert grown < RSS_GROWTH_MIB
