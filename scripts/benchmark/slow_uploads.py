"""Slow uploads against one client's writes (issue 34, item 3; issue 42, item 5): ``--uploads`` connections
from ``--addresses`` loopback addresses (127.0.0.2 on) each send a bulk POST head declaring ``--declared``
bytes (8 MB; with ``--put``, a PUT head declaring a byte more than it sends), one second later ``--sent``
bytes (32 KiB; ``--total`` bytes together at most, so that they can fill a budget exactly), then nothing;
meanwhile another client, from 127.0.0.1, PUTs a record and POSTs 14 records in turn for ``--seconds``.
Prints the victim's statuses, latencies (median, p99, max) and its longest stretch of refusals, and the
server's RSS before and during the attack; ``--budget`` sets GROWTH_BODY_BUFFER_BYTES:

    .venv/bin/python -m scripts.benchmark.slow_uploads [--uploads 1100] [--seconds 10]
    .venv/bin/python -m scripts.benchmark.slow_uploads --put --sent 65535 --total 4194304 --addresses 5 --uploads 65
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

DECLARED = 8 * 1024 * 1024
SENT = 32 * 1024
BULK = json.dumps([{"Country": f"C{index}", "Indicator": "NGDP_R", "Value": 1.5, "Year": 2000 + index}
                   for index in range(14)]).encode()
JSON_HEADERS = {"Content-Type": "application/json"}
Answer = tuple[str, int, float, float]  # method, status, when it was sent and how long it took, in seconds


def attack(port: int, count: int, addresses: list[str], sent: int, declared: int, total: int,
           put: bool) -> list[socket.socket]:
    """``count`` sockets from ``addresses`` in turn, each with a head declaring ``declared`` bytes (PUT: a
    byte more than it sends) and then ``sent`` bytes of its body, ``total`` together at most."""
    sockets = []
    sizes: list[int] = []
    for index in range(count):
        size = min(sent, total - sum(sizes))
        if size <= 0:
            break
        sizes.append(size)
        sock = socket.socket()
        sock.bind((addresses[index % len(addresses)], 0))
        sock.connect(("127.0.0.1", port))
        start = b"PUT /api/v1/growth/A/B/%d" % (index + 1) if put else b"POST /api/v1/growth"
        sock.sendall(start + b" HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % (size + 1 if put else declared))
        sockets.append(sock)
    time.sleep(1)  # the attacker's pace, as issue 34 describes it
    for sock, size in zip(sockets, sizes, strict=True):
        sock.sendall(b"[" + b" " * (size - 1))
    return sockets


def victim(port: int, seconds: float) -> list[Answer]:
    """(method, status, when, seconds) of each write made in turn for ``seconds``."""
    answers: list[Answer] = []
    begun = time.monotonic()
    while time.monotonic() - begun < seconds:
        for method, path, body in (("PUT", "/api/v1/growth/BRZ/NGDP_R/2002", b'{"value": 1.5}'),
                                   ("POST", "/api/v1/growth", BULK)):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            started = time.monotonic()
            connection.request(method, path, body, JSON_HEADERS)
            status = connection.getresponse().status
            answers.append((method, status, started - begun, time.monotonic() - started))
            connection.close()
    return answers


def longest_refusal(answers: list[Answer]) -> float:
    """The longest time between a refused answer's request and the next 2xx's (or the last answer's)."""
    longest, since = 0.0, None
    for _, status, when, _ in answers:
        if status >= 300 and since is None:
            since = when
        elif status < 300 and since is not None:
            longest, since = max(longest, when - since), None
    return max(longest, answers[-1][2] - since) if since is not None else longest


def report(answers: list[Answer]) -> None:
    for method in ("PUT", "POST"):
        mine = [answer for answer in answers if answer[0] == method]
        statuses = collections.Counter(status for _, status, _, _ in mine)
        latencies = sorted(took * 1000 for _, _, _, took in mine)
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        print(f"  {method:4} {dict(sorted(statuses.items()))}  median {statistics.median(latencies):.1f} ms, "
              f"p99 {p99:.1f} ms, max {latencies[-1]:.1f} ms, refused for {longest_refusal(mine):.1f} s at most")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uploads", type=int, default=1100)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--addresses", type=int, default=1, help="loopback addresses from 127.0.0.2 on")
    parser.add_argument("--sent", type=int, default=SENT, help="bytes each upload sends before stalling")
    parser.add_argument("--declared", type=int, default=DECLARED, help="each bulk upload's Content-Length")
    parser.add_argument("--total", type=int, default=2**62, help="bytes all uploads send together, at most")
    parser.add_argument("--put", action="store_true", help="PUT bodies instead of bulk ones")
    parser.add_argument("--budget", type=int, help="GROWTH_BODY_BUFFER_BYTES")
    args = parser.parse_args()
    addresses = [f"127.0.0.{2 + index}" for index in range(args.addresses)]
    server = LiveServer(**({} if args.budget is None else {"GROWTH_BODY_BUFFER_BYTES": str(args.budget)})).start()
    assert server.port is not None and server.process is not None  # started
    port, pid = server.port, server.process.pid
    with contextlib.ExitStack() as stack:
        stack.callback(server.stop)
        print(f"before the attack: RSS {memory_bytes(pid, 'VmRSS') / 2**20:.0f} MiB")
        report(victim(port, 2))
        sockets = attack(port, args.uploads, addresses, args.sent, args.declared, args.total, args.put)
        for sock in sockets:
            stack.callback(sock.close)
        source = addresses[0] if len(addresses) == 1 else f"{len(addresses)} addresses ({addresses[0]} on)"
        print(f"during {args.uploads} slow uploads from {source}:")
        report(victim(port, args.seconds))
        print(f"  RSS {memory_bytes(pid, 'VmRSS') / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
