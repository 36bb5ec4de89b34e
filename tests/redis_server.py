"""A throwaway redis-server on a free loopback port, for the tests of the Redis store."""

import shutil
import signal
import socket
import subprocess
import time

import redis

START_SECONDS = 10


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    """``start()``/``stop()`` may be called again: the server comes back on the same port, empty."""

    def __init__(self):
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server is not installed; ./scripts/test installs it (Debian redis-server)")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url, socket_timeout=1)
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"redis-server did not start on port {self.port}") from None
                time.sleep(0.01)  # between polls of a deadline-bounded wait
        client.close()
        return self

    def client(self):
        return redis.Redis.from_url(self.url, socket_timeout=2)

    def flush(self):
        with self.client() as client:
            client.flushall()

    def pause(self):
        """Stop answering without closing connections: a Redis that hangs."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self):
        self.process.send_signal(signal.SIGCONT)

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait()
