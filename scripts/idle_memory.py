"""Memory per idle keep-alive connection: start ``python -m growth_gevent``, open N connections that
each send one request and then stay idle, and print the server's RSS before and after.

    .venv/bin/python scripts/idle_memory.py [N]    # N = 5000 by default

The server runs with GROWTH_MAX_CONNECTIONS=N+100; the client needs N+100 descriptors of its own.
"""

import os
import re
import resource
import socket
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
REQUEST = b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n"
WARM_UP = 100


def rss(pid):
    with open(f"/proc/{pid}/status") as status:
        return int(re.search(r"^VmRSS:\s+(\d+) kB", status.read(), re.MULTILINE).group(1)) * 1024


def idle_connection(port):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(REQUEST)
    answer = b""
    while not answer.endswith(b"pong"):
        answer += sock.recv(4096)
    return sock


def main(count):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, count + 200)), hard))
    env = {**os.environ, "HOST": "127.0.0.1", "PORT": "0", "GROWTH_MAX_CONNECTIONS": str(count + WARM_UP)}
    server = subprocess.Popen([sys.executable, "-m", "growth_gevent"], cwd=ROOT, env=env,
                              stderr=subprocess.PIPE, text=True)
    try:
        for line in server.stderr:
            match = re.search(r"listening on http://[\d.]+:(\d+)", line)
            if match:
                port = int(match.group(1))
                break
        held = [idle_connection(port) for _ in range(WARM_UP)]  # warms the process up
        before = rss(server.pid)
        started = time.perf_counter()
        held += [idle_connection(port) for _ in range(count)]
        after = rss(server.pid)
        print(f"{count} idle keep-alive connections opened in {time.perf_counter() - started:.1f} s: "
              f"server RSS {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB, "
              f"{(after - before) / count:,.0f} bytes per idle connection")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
