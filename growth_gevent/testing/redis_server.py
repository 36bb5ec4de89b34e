"""A throwaway redis-server on a free loopback port, for the tests of the Redis store and the bench."""

import pathlib
import random
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from typing import Any

import redis

from growth_gevent.config import Config
from growth_gevent.stores.redis import RedisStore
from growth_gevent.testing.polling import wait_for

START_SECONDS = 10
# The kernel draws bind(0)'s ports and every outgoing connection's own port from this range (Linux's default
# 32768-60999). A port chosen below it is not handed to another process between the choice and the server's
# bind, nor while a stopped server waits to come back on it, however many connections run beside it.
EPHEMERAL_RANGE = pathlib.Path("/proc/sys/net/ipv4/ip_local_port_range")
EPHEMERAL_LOW = 32768
PORT_TRIES = 1000  # random picks before free_port gives up: only a range all but full runs out
LOG_LINES = 5  # of redis-server's output, in the error when it exits at start


def free_port() -> int:
    """A loopback port nothing is bound to, at random below the ephemeral range (SystemRandom: processes
    side by side, whose random module may be seeded alike, do not choose alike)."""
    low = int(EPHEMERAL_RANGE.read_text().split()[0]) if EPHEMERAL_RANGE.exists() else EPHEMERAL_LOW
    ports = range(1024, low) if low > 1024 else range(1024, 65536)
    choose = random.SystemRandom()
    for _ in range(PORT_TRIES):
        port = choose.choice(ports)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port in {ports} after {PORT_TRIES} tries")


def open_redis_store(url: str, **options: Any) -> RedisStore:
    """A RedisStore on ``url`` with the settings' defaults, but for ``options``."""
    defaults = Config()
    return RedisStore(url, **{"pool_size": defaults.redis_pool_size, "timeout": defaults.redis_timeout,
                              "chunk_size": defaults.bulk_chunk_records, "queue_records": defaults.bulk_queue_records,
                              "max_records": defaults.max_records,
                              "cache_stale_seconds": defaults.redis_cache_stale_seconds,
                              "verify_tls": defaults.redis_tls_verify, "min_replicas": defaults.redis_min_replicas,
                              "replica_timeout": defaults.redis_replica_timeout, **options})


class RedisServer:
    """``start()``/``stop()`` may be called again: the server comes back on the same port, with what it had
    persisted (without persistence, the default: empty)."""

    def __init__(self, tls: tuple[str, str] | None = None, settings: Sequence[str] = ()) -> None:
        """``tls=(certificate_file, key_file)``: serve TLS only (``rediss://``), with that certificate;
        ``settings``: more redis-server arguments (persistence is off unless they turn it on; its files
        go to a directory of the server's own, kept across restarts)."""
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server is not installed; ./scripts/test installs it (Debian redis-server)")
        self.port = free_port()
        self.tls = tls
        self.settings = list(settings)
        self.url = f"{'rediss' if tls else 'redis'}://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None
        self._directory = tempfile.TemporaryDirectory(prefix="redis-")

    def start(self) -> "RedisServer":
        listen = ["--port", str(self.port)]
        if self.tls:
            certificate, key = self.tls
            listen = ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", certificate,
                      "--tls-key-file", key, "--tls-ca-cert-file", certificate, "--tls-auth-clients", "no"]
        log = pathlib.Path(self._directory.name) / "redis-server.log"
        with log.open("ab") as output:
            process = self.process = subprocess.Popen(
                ["redis-server", *listen, "--bind", "127.0.0.1", "--dir", self._directory.name, "--save", "",
                 "--appendonly", "no", *self.settings],
                stdout=output)
        client = self.client()

        def answers() -> object:
            if process.poll() is not None:
                said = log.read_text(errors="replace").splitlines()[-LOG_LINES:]
                raise RuntimeError(f"redis-server exited at start on port {self.port}: {said}")
            try:
                return client.ping()
            except redis.ConnectionError:
                return False

        wait_for(answers, START_SECONDS)
        client.close()
        return self

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_timeout=2, **({"ssl_cert_reqs": "none"} if self.tls else {}))

    def flush(self) -> None:
        with self.client() as client:
            client.flushall()

    def pause(self) -> None:
        """Stop answering without closing connections: a Redis that hangs."""
        assert self.process is not None, "start() first"
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None, "start() first"
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """SIGKILL: a crash, which only what Redis had persisted survives."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait()
