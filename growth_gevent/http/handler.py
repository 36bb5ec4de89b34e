"""The pywsgi adapter: pywsgi's handler with the strict head (head.py), deadlines, lingering close and
what the server's cap and shutdown need. The only module that touches pywsgi's private API.

What it adds to each connection:

- the request head read by ``head.py`` (pywsgi's own parser is lenient); a refusal is answered with
  its status and the connection closed the lingering way;
- deadlines on every read: the first byte of a request (keep-alive idle time), its line and headers
  (from their first byte), its body (a grace, then a minimum rate, within a timeout for the whole of
  it), a lingering close; and on every response write;
- a response sent before its request body was read whole closes the connection the way nginx does
  (lingering close): answer, shut down the write side, discard what the client still sends for a
  bounded time, then close, so that clients that send the whole body first still read the answer;
- an ``X-Request-ID`` on every response: the router's if it sent a well-formed one, else a new one;
  the lines logged while serving the request carry it (``logs.request_id``);
- at shutdown, ``close_if_idle_or_stalled`` closes a connection that waits on its client with nothing
  owed to it: idle between requests, or mid-request with no byte for DRAIN_STALL_SECONDS; a request
  whose bytes keep arriving is read and answered.

pywsgi internals this relies on, checked by ``tests/test_server_internals.py`` so that a gevent
upgrade that changes them fails loudly: ``WSGIHandler.__init__(sock, address, server, rfile)``,
``read_requestline``, ``read_request``, ``MessageClass``, ``handle_one_request`` (its ``None``/``True``/
tuple results), ``_handle_client_error``, ``_send_error_response_if_possible``, ``_write_with_headers``,
``_sendall``, ``ignored_socket_errors``, the attributes ``wsgi_input`` (``Input.position``,
``content_length``, ``chunked_input``, ``chunk_length``, ``_chunked_input_error``), ``close_connection``,
``response_length``, ``status``, ``time_start``/``time_finish``, ``OldMessage``, and
``Input._Input__read_chunk_length`` (the chunk size, overridden), ``get_environ`` and
``StreamServer.do_read`` (in server.py).
"""

import errno
import io
import logging
import random
import re
import select
import socket
import time

import gevent
from gevent import monkey
from gevent.pywsgi import Input, OldMessage, WSGIHandler

from ..core.logs import request_id
from .head import (
    Refusal,
    check_chunk_size,
    check_framing,
    check_request_line,
    header_budget,
    read_fields,
    read_request_line,
)
from .responses import (
    APPLICATION_ERRORS,
    message_body,
    raw_response,
    status_line,
    too_many_connections,
)

# nginx's send_timeout: a client that reads nothing of a response for this long is dropped.
SEND_TIMEOUT_SECONDS = 60.0
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
# An X-Request-ID taken as the router sent it: Heroku's rule (20 to 200 letters, digits, +, /, = or -),
# safe in a header and a log line; any other is replaced by a new id.
_REQUEST_ID = re.compile(r"[A-Za-z0-9+/=-]{20,200}")
# The OS's poll(), without the 1024-descriptor limit of select() (gevent's select() calls the real one).
_poll = monkey.get_original("select", "poll")

access_log = logging.getLogger("growth_gevent.access")
http_log = logging.getLogger("growth_gevent.http")


def _status_code(status):
    # bytes after an application's response, the bare code as str after a protocol error.
    if isinstance(status, bytes):
        status = status.decode("latin-1")
    return (status or "000").split(" ", 1)[0]


class _DeadlineReader(io.RawIOBase):
    """The socket as pywsgi's ``rfile`` reads it, every read bounded by the handler's deadline.

    A deadline, not a timeout per read: a client that sends a byte a second never hits a timeout
    per read. While a body is read, each byte received moves the deadline on by 1/GROWTH_BODY_MIN_RATE
    seconds, up to the body's own deadline (mod_reqtimeout's MinRate). While the server is draining, an
    idle connection reads only what has already arrived.
    """

    def __init__(self, sock, handler):
        self._sock = sock
        self._handler = handler

    @property
    def max_body_bytes(self):
        return self._handler.server.max_body_bytes

    def readable(self):
        return True

    def readinto(self, buffer):
        handler = self._handler
        if handler.idle and handler.server.draining:
            remaining = 0.0
        else:
            remaining = handler.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(errno.ETIMEDOUT, "the client took too long")
        self._sock.settimeout(remaining)
        handler.waiting = True
        try:
            received = self._sock.recv_into(buffer)
            handler.last_received = time.monotonic()
            if handler.body_deadline is not None:
                handler.deadline = min(handler.deadline + received * handler.server.body_seconds_per_byte,
                                       handler.body_deadline)
            return received
        except BlockingIOError:
            raise TimeoutError(errno.ETIMEDOUT, "the server is shutting down") from None
        finally:
            handler.waiting = False


class _BoundedChunkedInput(Input):
    """pywsgi's reader of a chunked body, refusing a chunk larger than any body accepted as soon as its
    size line is read (a 413), rather than waiting for bytes that could only be refused."""

    __slots__ = ()

    def _Input__read_chunk_length(self, rfile):
        size = super()._Input__read_chunk_length(rfile)
        try:
            check_chunk_size(size, rfile.raw.max_body_bytes)
        except Refusal:
            self._chunked_input_error = True  # the rest is not read, not even to discard it
            raise
        return size


class GrowthHandler(WSGIHandler):
    """pywsgi's handler with strict framing, deadlines, lingering close and what shutdown needs."""

    # Timeouts are client behaviour, not server faults: quiet, like a reset.
    ignored_socket_errors = WSGIHandler.ignored_socket_errors + (errno.ETIMEDOUT,)
    deadline = 0.0
    body_deadline = None  # while a request's body may be read: the end of GROWTH_BODY_TIMEOUT
    # True while blocked on the client: between requests, or mid-headers or mid-body.
    waiting = False
    # True while no byte of a request is owed: before a request's first byte, or lingering.
    idle = True
    last_received = 0.0  # when a byte last arrived (or the connection was accepted)
    requests = 0
    request_id = None  # the X-Request-ID of the request being served

    def __init__(self, sock, address, server):
        super().__init__(sock, address, server,
                         rfile=io.BufferedReader(_DeadlineReader(sock, self), READ_BUFFER_BYTES))

    def handle(self):
        server = self.server
        connections = server.connections
        if len(connections) >= server.max_connections:
            self._refuse()
            return
        # Without it a response sent in two writes (a chunked one) would wait for the client's
        # delayed ACK of the first (docs/performance.md, History).
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        self.last_received = time.monotonic()
        connections.add(self)
        try:
            super().handle()
        finally:
            connections.discard(self)

    def _refuse(self):
        self.server.connection_limit_log.log(
            logging.WARNING, "connection limit reached (%d): answering 503 to new connections",
            self.server.max_connections)
        try:
            self.socket.settimeout(SEND_TIMEOUT_SECONDS)
            self.socket.sendall(too_many_connections(b"X-Request-ID: %s\r\n" % _new_request_id().encode()))
            self._linger(REFUSAL_LINGER_SECONDS)
        except OSError:
            pass
        finally:
            self.socket.close()

    def read_requestline(self):
        # The first request of a connection gets the header timeout to start; later ones the
        # keep-alive timeout. Running out of either before a byte arrives closes quietly.
        server = self.server
        self.deadline = time.monotonic() + (server.keepalive_timeout if self.requests else server.header_timeout)
        self.body_deadline = None
        self.request_id = None
        request_id.set(None)
        self.idle = True
        try:
            if not self.rfile.peek(1):
                return ""
        except OSError:
            return ""
        self.idle = False
        self.deadline = time.monotonic() + server.header_timeout
        self.requests += 1
        return read_request_line(self.rfile)

    def read_request(self, raw_requestline):
        check_request_line(raw_requestline)
        super().read_request(raw_requestline)
        now = time.monotonic()
        self.body_deadline = now + self.server.body_timeout
        self.deadline = now + self.server.body_grace  # then earned by the bytes that arrive
        return True

    def MessageClass(self, rfile, *args):
        """Read, check and parse the header block (pywsgi's parser is lenient)."""
        fields = read_fields(rfile, header_budget(self.server.max_header_bytes, self.requestline))
        check_framing(fields, self.request_version)
        headers = OldMessage()
        offered = []
        for name, value in fields:
            headers[name] = value
            if name.lower() == "x-request-id":
                offered.append(value)
        self._serve_as(offered[0] if len(offered) == 1 and _REQUEST_ID.fullmatch(offered[0]) else _new_request_id())
        return headers

    def _serve_as(self, identifier):
        self.request_id = identifier
        request_id.set(identifier)

    def handle_one_request(self):
        try:
            result = super().handle_one_request()
        except Refusal as error:  # raised where pywsgi does not catch: the request line
            result = self._handle_client_error(error)
        if result is True:
            # A fast client's next request is already waiting when this one is answered, so the read
            # would not block and this greenlet would never yield: other connections would starve for
            # whole seconds. Yield once per request so that every connection takes its turn.
            gevent.sleep(0)
            return True
        if type(result) is tuple:
            # A request that could not be read: answer it ourselves, then close the lingering way,
            # since whatever the client sent after it cannot be trusted to be a request.
            self.status, response = result
            try:
                self.socket.settimeout(SEND_TIMEOUT_SECONDS)
                self.socket.sendall(response)
            except OSError:
                return None
            self.time_finish = time.time()
            self.log_request()
            self._linger(LINGER_SECONDS)
            return None
        if self.close_connection and self.wsgi_input is not None and self._body_unread():
            # A client out of time for its body (a 408) gets no more in a lingering close.
            self._linger(LINGER_SECONDS if time.monotonic() < self.deadline else 0)
        return result

    def get_environ(self):
        environ = super().get_environ()
        if self.wsgi_input.chunked_input:
            self.wsgi_input.__class__ = _BoundedChunkedInput  # the same slots: only the class changes
        return environ

    def _handle_client_error(self, error):
        if isinstance(error, Refusal):
            status, message = error.status, str(error)
        elif isinstance(error, TimeoutError):
            status, message = 408, "request not received in time"
        else:  # what pywsgi's own checks refuse (a HEAD with a body)
            status, message = 400, "malformed HTTP request"
        if self.request_id is None:  # refused before its headers were read
            self._serve_as(_new_request_id())
        http_log.info("bad request from %s: %s", self.client_address[0], message)
        return str(status), raw_response(status, message, b"X-Request-ID: %s\r\n" % self.request_id.encode())

    def _body_unread(self):
        body = self.wsgi_input
        if body.chunked_input:
            return body.chunk_length != 0
        return body.position < (body.content_length or 0)

    def start_response(self, status, headers, exc_info=None):
        # A response before the body was read whole ends the connection: the rest of the body would
        # otherwise be read as the next request (after Expect: 100-continue it never comes).
        closing = self.server.draining or self._body_unread()
        if closing and not any(name.lower() == "connection" for name, _ in headers):
            headers = [*headers, ("Connection", "close")]
        write = super().start_response(status, headers, exc_info)
        self.response_headers.append((b"X-Request-ID", self.request_id.encode()))
        if not self.close_connection:
            # How long the connection is kept idle, so that a client closes it before it is closed under it.
            self.response_headers.append((b"Keep-Alive", self.server.keep_alive_header))
        else:
            # pywsgi's own flag for "the socket will be closed, do not drain the request body": the
            # lingering close discards it instead, bounded.
            self.wsgi_input._chunked_input_error = True
        return write

    def _linger(self, seconds):
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

    def _sendall(self, data):
        self.socket.settimeout(SEND_TIMEOUT_SECONDS)
        try:
            super()._sendall(data)
        except TimeoutError:
            raise TimeoutError(errno.ETIMEDOUT, "the client did not read the response in time") from None

    def _write_with_headers(self, data):
        # pywsgi sends the head and the body in two writes; one write saves a syscall per response.
        self.headers_sent = True
        self.finalize_headers()
        head = b"".join([b"HTTP/1.1 ", self.status, b"\r\n",
                         *[b"%s: %s\r\n" % header for header in self.response_headers], b"\r\n"])
        if self.response_use_chunked:
            self._sendall(head)
            self._write(data)
        else:
            self._sendall(head + data)

    def log_request(self):
        # One logfmt line per request; and none formatted at all when the access log is off.
        if self.server.access_log:
            duration = (self.time_finish - self.time_start) * 1000 if self.time_finish else None
            access_log.info("", extra={"fields": {
                "method": self.command or "-", "path": self.path or "-",
                "status": _status_code(self.status),
                "duration_ms": "-" if duration is None else f"{duration:.3f}",
                "bytes": self.response_length, "remote": self.client_address[0]}})

    def log_error(self, message, *args):
        http_log.info("%s: %s", self.client_address[0], message % args if args else message)

    def _send_error_response_if_possible(self, error_code):
        if self.response_length:
            self.close_connection = True
            return
        body = message_body(APPLICATION_ERRORS[error_code])
        try:
            self.start_response(status_line(error_code), [
                ("Content-Type", "application/json"), ("X-Content-Type-Options", "nosniff"), ("Connection", "close"),
                ("Content-Length", str(len(body)))])
            self.write(body)
        except OSError:
            self.close_connection = True

    def close_if_idle_or_stalled(self, now):
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


def _new_request_id():
    # 128 random bits as 32 hex digits, as a UUID4's; from random, not os.urandom: an id needs to be
    # unique, not secret, and this costs a fraction of uuid.uuid4().hex (docs/performance.md; forked workers
    # get their own: random reseeds in a child after fork).
    return f"{random.getrandbits(128):032x}"
