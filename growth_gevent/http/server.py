"""The gevent pywsgi server, hardened for the open internet: what a process does with connections.

- a cap on connections below the descriptor limit (past it ``503``, see handler.py), and a clear log
  line and a pause instead of a traceback when descriptors run out anyway;
- graceful shutdown that waits only for requests in flight: idle connections, and those still
  waiting for a client's headers or body, are closed at once;
- the listening socket, bound once for every worker.

The request head is read by ``head.py``, each connection served by ``handler.py``, each request on it by
``exchange.py``.
"""

import errno
import logging
import resource
import socket
import time
from collections.abc import Callable
from typing import Any, Protocol

import gevent
from gevent.baseserver import parse_address
from gevent.pool import Pool
from gevent.pywsgi import WSGIServer

from ..core.logs import ThrottledLog
from .clients import TrustedRouters
from .exchange import http_log
from .handler import BodyPace, Connection

# Above the default of 128 so that 1000 clients connecting at once are queued, not dropped.
LISTEN_BACKLOG = 2048
# Descriptors kept for what is not a client connection: the listener, log files, Redis, snapshots.
RESERVED_DESCRIPTORS = 100
# Connections over the cap that are still answered 503; past these, new ones wait in the backlog.
REFUSED_CONNECTIONS_ANSWERED = 64
# One log line per this many seconds for events a flood repeats (refusals, descriptor exhaustion).
NOISY_LOG_SECONDS = 10.0
# accept() failures that mean "out of a resource for now", not "broken".
_RESOURCE_ERRNOS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
ACCEPT_PAUSE_SECONDS = 0.1
# How often shutdown looks for connections that became idle or stalled.
DRAIN_CHECK_SECONDS = 0.1

log = logging.getLogger("growth_gevent")

WSGIApplication = Callable[[dict[str, Any], Callable[..., Any]], Any]


class Settings(Protocol):
    """What the server reads of its configuration (``growth_gevent.config.Config``, which this layer may not
    import)."""

    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def max_connections(self) -> int: ...
    @property
    def access_log(self) -> bool: ...
    @property
    def header_timeout(self) -> float: ...
    @property
    def body_timeout(self) -> float: ...
    @property
    def body_grace(self) -> float: ...
    @property
    def body_min_rate(self) -> int: ...
    @property
    def keepalive_timeout(self) -> float: ...
    @property
    def max_header_bytes(self) -> int: ...
    @property
    def max_body_bytes(self) -> int: ...
    @property
    def forwarded_allow_ips(self) -> TrustedRouters | None: ...


class GrowthServer(WSGIServer):
    handler_class = Connection

    def __init__(self, listener: socket.socket, application: WSGIApplication, config: Settings, **kwargs: Any) -> None:
        self.max_connections = connection_cap(config.max_connections)
        super().__init__(listener, application, spawn=Pool(self.max_connections + REFUSED_CONNECTIONS_ANSWERED),
                         log=None, error_log=http_log, **kwargs)
        self.environ["wsgi.input_terminated"] = True  # every body reader stops at its body's end
        self.access_log = config.access_log
        self.header_timeout = config.header_timeout
        self.body_pace = BodyPace.of(config.body_grace, config.body_min_rate, config.body_timeout)
        self.trusted_routers = config.forwarded_allow_ips  # None: X-Forwarded-For is ignored
        self.keepalive_timeout = config.keepalive_timeout
        self.keep_alive_header = b"Keep-Alive: timeout=%d\r\n" % config.keepalive_timeout
        self.max_header_bytes = config.max_header_bytes
        self.max_body_bytes = config.max_body_bytes
        self.connections: set[Connection] = set()
        self.draining = False
        self.connection_limit_log = ThrottledLog(1, NOISY_LOG_SECONDS, log)
        self.accept_error_log = ThrottledLog(1, NOISY_LOG_SECONDS, log)

    def do_read(self) -> Any:
        try:
            return super().do_read()
        except OSError as error:
            if error.errno not in _RESOURCE_ERRNOS:
                raise
            # Out of descriptors or memory: say so once in a while, and pause accepting instead of
            # spinning on accept() (the connection waits in the backlog).
            self.accept_error_log.log(logging.ERROR, "cannot accept connections: %s; pausing accepting for %ss",
                                      errno.errorcode.get(error.errno, error.errno), ACCEPT_PAUSE_SECONDS)
        self.stop_accepting()
        gevent.spawn_later(ACCEPT_PAUSE_SECONDS, self._resume_accepting)
        return None

    def _resume_accepting(self) -> None:
        if not self.closed and not self.draining:
            self.start_accepting()

    def drain(self, timeout: float) -> bool:
        """Stop accepting, close connections that wait on their client with nothing owed to them (at once,
        and then as they stall), let requests in flight finish.

        Returns False when requests were still running after ``timeout`` seconds (they are killed).
        """
        self.draining = True
        self.close()
        log.info("shutting down: stopped accepting, finishing %d connections", len(self.connections))
        reaper = gevent.spawn(self._close_idle_and_stalled)
        finished = self.pool.join(timeout=timeout)
        reaper.kill()
        self.pool.kill(block=True, timeout=1)
        return finished

    def _close_idle_and_stalled(self) -> None:
        while True:
            now = time.monotonic()
            for handler in list(self.connections):
                handler.close_if_idle_or_stalled(now)
            gevent.sleep(DRAIN_CHECK_SECONDS)


def connection_cap(configured: int) -> int:
    """GROWTH_MAX_CONNECTIONS, lowered so that connections cannot exhaust the descriptor limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return configured
    fitting = max(1, soft - RESERVED_DESCRIPTORS - REFUSED_CONNECTIONS_ANSWERED)
    if configured > fitting:
        log.warning("GROWTH_MAX_CONNECTIONS=%d lowered to %d to fit the open file limit of %d",
                    configured, fitting, soft)
        return fitting
    return configured


def listen(config: Settings) -> socket.socket:
    """The listening socket, bound once: every worker process accepts on the same one."""
    family, address = parse_address((config.host, config.port))
    return GrowthServer.get_listener(address, LISTEN_BACKLOG, family)


def make_server(app: WSGIApplication, config: Settings, listener: socket.socket) -> GrowthServer:
    # A fixed SERVER_NAME spares pywsgi a reverse-DNS lookup of the listening address.
    return GrowthServer(listener, app, config, environ={"SERVER_NAME": config.host})
