"""A Redis primary, its replicas and the Sentinels that watch them, on loopback ports: what
``GROWTH_STORE=redis+sentinel://`` runs against in the tests and the bench."""

import pathlib
import signal
import subprocess
import tempfile
from collections.abc import Sequence

import redis

from growth_gevent.testing.polling import wait_for
from growth_gevent.testing.redis_server import START_SECONDS, RedisServer, free_port

SERVICE = "growth"
# Short, so that a failover takes a few seconds: Sentinel's defaults (30 s down, 3 min timeout) suit a network.
DOWN_AFTER_MILLISECONDS = 1000
FAILOVER_TIMEOUT_MILLISECONDS = 3000
# How long a failover may take once the primary is down: Sentinel's down-after, its election, the promotion.
FAILOVER_SECONDS = 15


class SentinelServer:
    """One ``redis-server FILE --sentinel`` process; ``start()``/``stop()`` may be called again (it keeps
    what it learnt in its file, as Sentinel does)."""

    def __init__(self, directory: pathlib.Path) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self._config = directory / f"sentinel-{self.port}.conf"
        self._log = directory / f"sentinel-{self.port}.log"

    def configure(self, primary_port: int, quorum: int) -> None:
        self._config.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {self._config.parent}\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {primary_port} {quorum}\n"
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MILLISECONDS}\n"
            f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MILLISECONDS}\n"
            f"sentinel parallel-syncs {SERVICE} 1\n")

    def start(self) -> "SentinelServer":
        with self._log.open("ab") as output:
            process = self.process = subprocess.Popen(["redis-server", str(self._config), "--sentinel"], stdout=output)
        wait_for(lambda: self._answers(process), START_SECONDS)
        return self

    def _answers(self, process: subprocess.Popen[bytes]) -> object:
        if process.poll() is not None:
            raise RuntimeError(f"Sentinel exited at start: {self._log.read_text(errors='replace')[-500:]}")
        try:
            with self.client() as client:
                return client.ping()
        except redis.ConnectionError:
            return False

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2)

    def master(self) -> dict:
        """What this Sentinel knows of the service's primary (SENTINEL MASTER)."""
        with self.client() as client:
            return client.sentinel_master(SERVICE)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()


class SentinelGroup:
    """A primary, ``replicas`` replicas and ``sentinels`` Sentinels (quorum: a majority) watching the
    service ``growth``; ``url`` is the ``redis+sentinel://`` URL of them all. ``settings``: more
    redis-server arguments for the data nodes (persistence is off unless they turn it on)."""

    def __init__(self, replicas: int = 1, sentinels: int = 3, settings: Sequence[str] = ()) -> None:
        # A replica's first sync at once, not after Redis's default 5 s wait for more replicas to share it.
        settings = ["--repl-diskless-sync-delay", "0", *settings]
        self._directory = tempfile.TemporaryDirectory(prefix="sentinel-")
        self.nodes = [RedisServer(settings=settings)]
        self.nodes += [RedisServer(settings=[*settings, "--replicaof", "127.0.0.1", str(self.nodes[0].port)])
                       for _ in range(replicas)]
        self.sentinels = [SentinelServer(pathlib.Path(self._directory.name)) for _ in range(sentinels)]
        hosts = ",".join(f"127.0.0.1:{sentinel.port}" for sentinel in self.sentinels)
        self.url = f"redis+sentinel://{hosts}/{SERVICE}/0"

    def start(self) -> "SentinelGroup":
        """Every process, once the replicas are in sync and each Sentinel knows the replicas and the
        other Sentinels (without which it could not agree to a failover)."""
        for node in self.nodes:
            node.start()
        for sentinel in self.sentinels:
            sentinel.configure(self.nodes[0].port, len(self.sentinels) // 2 + 1)
            sentinel.start()
        wait_for(self._ready, FAILOVER_SECONDS, interval=0.1)
        return self

    def _ready(self) -> bool:
        replicas, others = len(self.nodes) - 1, len(self.sentinels) - 1
        try:
            for replica in self.nodes[1:]:
                with replica.client() as client:
                    if client.info("replication")["master_link_status"] != "up":
                        return False
            return all(state["num-slaves"] == replicas and state["num-other-sentinels"] == others
                       for state in (sentinel.master() for sentinel in self.sentinels))
        except redis.RedisError:
            return False

    def primary(self) -> RedisServer:
        """The data node that the running Sentinels name the primary (all agreeing)."""
        ports = {sentinel.master()["port"] for sentinel in self.sentinels
                 if sentinel.process is not None and sentinel.process.poll() is None}
        assert len(ports) == 1, f"the Sentinels disagree on the primary: {ports}"
        port = ports.pop()
        return next(node for node in self.nodes if node.port == port)

    def wait_for_failover(self, old: RedisServer) -> RedisServer:
        """The new primary, once the running Sentinels all name one other than ``old``."""
        def new_primary() -> RedisServer | None:
            try:
                primary = self.primary()
            except (AssertionError, redis.RedisError):
                return None
            return primary if primary is not old else None

        return wait_for(new_primary, FAILOVER_SECONDS, interval=0.1)

    def wait_until_replica(self, node: RedisServer) -> None:
        """Once ``node`` says it is a replica. Sentinel sends a node it reconfigures CLIENT KILL TYPE normal
        with the REPLICAOF, so that clients ask again where the primary is: a connection reset meanwhile is
        "not yet", not a failure."""
        def replica() -> bool:
            try:
                with node.client() as client:
                    return client.execute_command("ROLE")[0] == b"slave"
            except redis.ConnectionError:
                return False

        wait_for(replica, FAILOVER_SECONDS, interval=0.1)

    def stop(self) -> None:
        servers: list[SentinelServer | RedisServer] = [*self.sentinels, *self.nodes]
        for server in servers:
            server.stop()
