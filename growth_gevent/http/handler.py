"""One client connection, served from accept to close: ``Connection`` is the server's ``handler_class``,
pywsgi's documented hook (a callable of ``(socket, address, server)`` whose ``handle()`` serves the
socket). Everything between the socket and the WSGI application is ours: no pywsgi handler underneath.

The connection holds what lasts as long as its socket; each request on it is an ``Exchange``
(exchange.py: the environ, ``start_response``, the response's framing, the 500 path). What it does:

- the request head read by ``head.parse_head``, the very function the corpus in ``tests/http/requests/``
  drives; a refusal is answered with its status and the connection closed the lingering way;
- deadlines on every read, all kept by ``_DeadlineReader``: the first byte of a request (keep-alive idle
  time), its head (from its first byte), its body (a grace, then a minimum rate from its first byte with
  at most CREDIT_GRACES earned ahead, within a timeout for the whole of it); writes have the exchange's
  send timeout, a lingering close its own;
- the client: the socket's address, or behind a router that FORWARDED_ALLOW_IPS trusts, checked once a
  connection, the one its X-Forwarded-For names (clients.py, read by the exchange);
- keep-alive, and a yield to the other connections after each answer;
- a response sent before its request body was read whole closes the connection the way nginx does
  (lingering close): answer, shut down the write side, discard what the client still sends for a
  bounded time, then close, so that clients that send the whole body first still read the answer;
- at shutdown, ``close_if_idle_or_stalled`` closes a connection that waits on its client with nothing
  owed to it: idle between requests, or mid-request with no byte for DRAIN_STALL_SECONDS; a request
  whose bytes keep arriving is read and answered.
"""

import dataclasses
import errno
import io
import logging
import select
import socket
import time
from typing import TYPE_CHECKING

import gevent
from gevent import monkey

from .clients import TrustedRouters
from .exchange import SEND_TIMEOUT_SECONDS, Exchange, new_request_id
from .head import Framing, Refusal, parse_head
from .responses import too_many_connections

if TYPE_CHECKING:
    from typing_extensions import Buffer

    from .server import GrowthServer

# Lingering close (nginx's lingering_time, lingering_timeout), bounded in bytes too.
LINGER_SECONDS = 10.0
LINGER_IDLE_SECONDS = 2.0
LINGER_MAX_BYTES = 64 * 1024 * 1024
# How long a refused connection's request is discarded before closing, so the 503 is read.
REFUSAL_LINGER_SECONDS = 1.0
READ_BUFFER_BYTES = 64 * 1024
# The kernel's send buffer of a connection, fixed instead of autotuned (up to 4 MiB): a client that
# pipelines requests and reads none of the answers holds at most this much (the kernel doubles it for
# its bookkeeping) before the greenlet blocks in sendall, reading no next request: few pages built for
# nobody. 256 KiB still streams ~2.6 MB/s at 100 ms of round trip, ~25 MB/s at 10 ms.
SEND_BUFFER_BYTES = 256 * 1024
# At shutdown, a request whose bytes have stopped arriving for this long is dropped (nothing of it was
# acknowledged); one whose bytes keep arriving gets GROWTH_SHUTDOWN_TIMEOUT to finish.
DRAIN_STALL_SECONDS = 1.0
# The most a body's bytes earn ahead of its last one, in graces (Apache's body=20-40: twice the first
# timeout): a burst buys a short silence, never the whole body timeout (docs/bounds.md#held-bodies).
CREDIT_GRACES = 2
# The OS's poll(), without the 1024-descriptor limit of select() (gevent's select() calls the real one).
_poll = monkey.get_original("select", "poll")


@dataclasses.dataclass(frozen=True, slots=True)
class BodyPace:
    """How long a body's bytes may take (after mod_reqtimeout's ``body=20-40,MinRate=500``): ``grace`` seconds
    from the end of its head, then ``seconds_per_byte`` more for each byte received from its first (those
    that came with the head too), never more than ``credit`` ahead of the last one nor past ``timeout`` for
    the whole body (GROWTH_BODY_GRACE, 1 / GROWTH_BODY_MIN_RATE, CREDIT_GRACES graces, GROWTH_BODY_TIMEOUT)."""

    grace: float
    seconds_per_byte: float
    timeout: float
    credit: float
    # Both bounds at once (the credit, the whole body's timeout) on the bytes that came with the head, for
    # which both are counted from the same moment: one test instead of a min() of three.
    head_credit: float

    @classmethod
    def of(cls, grace: float, min_rate: int, timeout: float) -> "BodyPace":
        # Without a minimum rate a body's grace is its whole timeout, and its bytes earn no more.
        if not min_rate:
            return cls(timeout, 0.0, timeout, timeout, timeout)
        grace = min(grace, timeout)
        credit = CREDIT_GRACES * grace
        return cls(grace, 1 / min_rate, timeout, credit, min(credit, timeout))


class _DeadlineReader(io.RawIOBase):
    """The socket as the connection reads it, every read bounded by a deadline: the one place of a
    connection's read deadlines, the body's minimum rate included.

    A deadline, not a timeout per read: a client that sends a byte a second never hits a timeout per
    read. A body's deadline (``start_body``) is first its grace away, then each byte received moves it on,
    those read with the head first, never more than the pace's credit ahead and up to the body's own
    deadline, at the server's ``BodyPace``. While the server is draining, an idle
    connection reads only what has already arrived.
    """

    # Slots, not the instance dict of io's base class, which the interpreter does not specialize: reads of
    # self.deadline cost four times as much, ~10 k instructions a request (docs/http.md).
    __slots__ = ("_sock", "_connection", "_pace", "deadline", "body_deadline")

    def __init__(self, sock: socket.socket, connection: "Connection") -> None:
        self._sock = sock
        self._connection = connection
        self._pace = connection.server.body_pace
        self.deadline = 0.0
        self.body_deadline: float | None = None  # while a body may be read: the end of GROWTH_BODY_TIMEOUT

    def readable(self) -> bool:
        return True

    def wait(self, seconds: float) -> None:
        """Reads from now on end within ``seconds``: a request's first byte, then its head."""
        self.deadline = time.monotonic() + seconds
        self.body_deadline = None

    def start_body(self, rfile: "io.BufferedReader[_DeadlineReader]", framing: Framing) -> int:
        """The head is read: its body's bytes get the grace, and earn more as they arrive, those that came
        in the head's packets (already in ``rfile``) first: the rate counts from the body's first byte.
        Returns how many bytes came with the head (of a Content-Length body, at most its length)."""
        now = time.monotonic()
        pace = self._pace
        self.body_deadline = now + pace.timeout
        length = framing.content_length
        if not (length or framing.chunked):
            self.deadline = now + pace.grace
            return 0
        self.deadline = 0.0  # so that a read finds only what has arrived, and waits for nothing
        try:
            early = len(rfile.peek())
        except TimeoutError:  # nothing came with the head
            early = 0
        if length and early > length:  # what follows the body is the next request's
            early = length
        deadline = now + pace.grace
        if early and pace.seconds_per_byte:
            deadline += early * pace.seconds_per_byte
            if deadline > now + pace.head_credit:
                deadline = now + pace.head_credit
        self.deadline = deadline
        return early

    def out_of_time(self) -> bool:
        return time.monotonic() >= self.deadline

    def readinto(self, buffer: "Buffer") -> int:
        connection = self._connection
        if connection.idle and connection.server.draining:
            remaining = 0.0
        else:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(errno.ETIMEDOUT, "the client took too long")
        self._sock.settimeout(remaining)
        connection.waiting = True
        try:
            received = self._sock.recv_into(buffer)
            now = connection.last_received = time.monotonic()
            if self.body_deadline is not None:
                pace = self._pace
                self.deadline = min(self.deadline + received * pace.seconds_per_byte, now + pace.credit,
                                    self.body_deadline)
            return received
        except BlockingIOError:
            raise TimeoutError(errno.ETIMEDOUT, "the server is shutting down") from None
        finally:
            connection.waiting = False


class Connection:
    """A client connection: its socket, its deadlines, keep-alive, its lingering close and its drain;
    each request on it an ``Exchange``."""

    def __init__(self, sock: socket.socket, address: tuple[str, int], server: "GrowthServer") -> None:
        self.socket = sock
        self.client_address = address
        self.remote_port = str(address[1])
        self.server = server
        self.reader = _DeadlineReader(sock, self)
        self.rfile = io.BufferedReader(self.reader, READ_BUFFER_BYTES)
        # True while blocked on the client: between requests, or mid-head or mid-body.
        self.waiting = False
        # True while no byte of a request is owed: before a request's first byte, or lingering.
        self.idle = True
        self.last_received = time.monotonic()  # when a byte last arrived (or the connection was accepted)
        self.requests = 0
        routers = server.trusted_routers
        # The routers' rule when the peer is one of them, its X-Forwarded-For then naming the client; else None.
        self.router: TrustedRouters | None = routers if routers is not None and routers.trusts(address[0]) else None
        self.exchange = Exchange(self)  # the request being answered, or the last one

    def handle(self) -> None:
        server = self.server
        connections = server.connections
        if len(connections) >= server.max_connections:
            self._refuse()
            return
        sock = self.socket
        # Without it a response sent in two writes (a chunked one) would wait for the client's
        # delayed ACK of the first (docs/performance.md#one-send-and-tcp_nodelay).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        connections.add(self)
        try:
            while self._serve_request():
                # A pipelining client's next request is already read, so this greenlet would never yield and
                # other connections would starve: yield once a request. Under load it is also the cheapest wait:
                # when the greenlet runs again its next request has mostly arrived (yielding only after requests
                # that had not waited made reads find nothing and wait on the loop: 24% more CPU a request).
                gevent.sleep(0)
        finally:
            connections.discard(self)
            sock.close()

    def _refuse(self) -> None:
        self.server.connection_limit_log.log(
            logging.WARNING, "connection limit reached (%d): answering 503 to new connections",
            self.server.max_connections)
        try:
            self.socket.settimeout(SEND_TIMEOUT_SECONDS)
            self.socket.sendall(too_many_connections(b"X-Request-ID: %s\r\n" % new_request_id().encode()))
            self._linger(REFUSAL_LINGER_SECONDS)
        except OSError:
            pass
        finally:
            self.socket.close()

    def _serve_request(self) -> bool:
        """Read one request and answer it; True when the connection is kept for the next one."""
        server = self.server
        reader = self.reader
        # The first request of a connection gets the header timeout to start; later ones the
        # keep-alive timeout. Running out of either before a byte arrives closes quietly.
        reader.wait(server.keepalive_timeout if self.requests else server.header_timeout)
        # The last request's id stays set while idle: nothing is logged on this greenlet until the next
        # request's head is read (or refused), which sets its own.
        self.idle = True
        try:
            if not self.rfile.peek(1):
                return False
        except OSError:
            return False
        self.idle = False
        exchange = self.exchange
        exchange.started = time.time()
        reader.wait(server.header_timeout)
        self.requests += 1
        try:
            head = parse_head(self.rfile, server.max_header_bytes)
        except Refusal as error:
            # Whatever the client sent after a head that could not be read cannot be trusted to be a request.
            if exchange.refuse(error):
                if server.access_log:
                    exchange.log()
                self._linger(LINGER_SECONDS)
            return False
        except OSError:  # the client reset the connection mid-head
            return False
        exchange.serve(head, reader.start_body(self.rfile, head.framing))
        if server.access_log:
            exchange.log()
        if not exchange.close_after:
            return True
        if not exchange.body.finished:
            # A client out of time for its body (a 408) gets no more in a lingering close.
            self._linger(0 if reader.out_of_time() else LINGER_SECONDS)
        return False

    def _linger(self, seconds: float) -> None:
        """Shut down the write side, discard what the client still sends for a bounded time, return."""
        sock = self.socket
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            return
        deadline = time.monotonic() + seconds
        discarded = 0
        self.waiting = self.idle = True  # shutdown may close it at once
        try:
            while discarded < LINGER_MAX_BYTES and not self.server.draining:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                sock.settimeout(min(remaining, LINGER_IDLE_SECONDS))
                data = sock.recv(READ_BUFFER_BYTES)
                if not data:
                    return
                discarded += len(data)
        except OSError:
            pass
        finally:
            self.waiting = False

    def close_if_idle_or_stalled(self, now: float) -> None:
        """At shutdown: close a connection that waits on its client with nothing owed to it: idle (no
        byte of a next request), or mid-request with no byte for DRAIN_STALL_SECONDS. What has arrived
        is still read, so a request sent whole is answered; one whose bytes keep coming is read on."""
        if not self.waiting or not (self.idle or now - self.last_received >= DRAIN_STALL_SECONDS):
            return
        readable = _poll()
        readable.register(self.socket, select.POLLIN)
        if not readable.poll(0):
            try:
                self.socket.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
