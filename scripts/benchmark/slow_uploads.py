"""Slow uploads against one client's writes (issue 34, item 3): ``--uploads`` connections from 127.0.0.2 each
send a bulk POST head declaring 8 MB, one second later 32 KiB, then nothing (those bytes earn the whole
body timeout at the minimum rate); meanwhile another client, from 127.0.0.1, PUTs a record and POSTs 14
records in turn for ``--seconds``. Prints the victim's statuses and latencies (median, p99, max) and the
server's RSS before and during the attack:

    .venv/bin/python -m scripts.benchmark.slow_uploads [--uploads 1100] [--seconds 10]
"""

import argparse
import collections
import contextlib
import http.client
import json
import socket
import statistics
import time

from growth_gevent.testing import LiveServer

from .procfs import memory_bytes

ATTACKER = "127.0.0.2"
DECLARED = 8 * 1024 * 1024
SENT = 32 * 1024
BULK = json.dumps([{"Country": f"C{index}", "Indicator": "NGDP_R", "Value": 1.5, "Year": 2000 + index}
                   for index in range(14)]).encode()
JSON_HEADERS = {"Content-Type": "application/json"}


def attack(port, count):
    """``count`` sockets from ATTACKER, each with a head declaring DECLARED bytes and then SENT of them."""
    sockets = []
    for _ in range(count):
        sock = socket.socket()
        sock.bind((ATTACKER, 0))
        sock.connect(("127.0.0.1", port))
        sock.sendall(b"POST /api/v1/growth HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % DECLARED)
        sockets.append(sock)
    time.sleep(1)  # the attacker's pace, as issue 34 describes it
    for sock in sockets:
        sock.sendall(b"[" + b" " * (SENT - 1))
    return sockets


def victim(port, seconds):
    """(method, status, seconds) of each write made in turn for ``seconds``."""
    answers = []
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        for method, path, body in (("PUT", "/api/v1/growth/BRZ/NGDP_R/2002", b'{"value": 1.5}'),
                                   ("POST", "/api/v1/growth", BULK)):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            started = time.monotonic()
            connection.request(method, path, body, JSON_HEADERS)
            status = connection.getresponse().status
            answers.append((method, status, time.monotonic() - started))
            connection.close()
    return answers


def report(answers):
    for method in ("PUT", "POST"):
        mine = [(status, took) for each, status, took in answers if each == method]
        statuses = collections.Counter(status for status, _ in mine)
        latencies = sorted(took * 1000 for _, took in mine)
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        print(f"  {method:4} {dict(sorted(statuses.items()))}  median {statistics.median(latencies):.1f} ms, "
              f"p99 {p99:.1f} ms, max {latencies[-1]:.1f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uploads", type=int, default=1100)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    server = LiveServer().start()
    with contextlib.ExitStack() as stack:
        stack.callback(server.stop)
        print(f"before the attack: RSS {memory_bytes(server.process.pid, 'VmRSS') / 2**20:.0f} MiB")
        report(victim(server.port, 2))
        sockets = attack(server.port, args.uploads)
        for sock in sockets:
            stack.callback(sock.close)
        print(f"during {args.uploads} slow uploads from {ATTACKER}:")
        report(victim(server.port, args.seconds))
        print(f"  RSS {memory_bytes(server.process.pid, 'VmRSS') / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
