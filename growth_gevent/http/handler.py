"""One client connection, served from accept to close: ``Connection`` is the server's ``handler_class``,
pywsgi's documented hook (a callable of ``(socket, address, server)`` whose ``handle()`` serves the
socket). Everything between the socket and the WSGI application is ours: no pywsgi handler underneath.

What it does with each connection:

- the request head read by ``head.parse_head``, the very function the corpus in ``tests/http/requests/``
  drives; a refusal is answered with its status and the connection closed the lingering way;
- the body read by ``bodies.py`` as ``wsgi.input``, framed and bounded where its bytes arrive;
- deadlines on every read, kept on the connection: the first byte of a request (keep-alive idle time),
  its head (from its first byte), its body (a grace, then a minimum rate, within a timeout for the
  whole of it), a lingering close; and on every response write;
- a response sent before its request body was read whole closes the connection the way nginx does
  (lingering close): answer, shut down the write side, discard what the client still sends for a
  bounded time, then close, so that clients that send the whole body first still read the answer;
- an ``X-Request-ID`` on every response: the router's if it sent a well-formed one, else a new one;
  the lines logged while serving the request carry it (``logs.request_id``);
- the WSGI environ built once from the parsed head, the status line and headers written with the
  body's first bytes in one ``sendall``, the ``Date`` made once a second;
- at shutdown, ``close_if_idle_or_stalled`` closes a connection that waits on its client with nothing
  owed to it: idle between requests, or mid-request with no byte for DRAIN_STALL_SECONDS; a request
  whose bytes keep arriving is read and answered.
"""

import errno
import io
import logging
import random
import re
import select
import socket
import time
from collections.abc import Iterable
from urllib.parse import unquote

import gevent
from gevent import monkey

from ..core.logs import request_id
from .bodies import ChunkedBody, SizedBody, open_body
from .head import Refusal, parse_head
from .responses import APPLICATION_FAILED, http_date, message_body, raw_response, status_line, too_many_connections
from .wsgi import ENVIRON_KEYS, STATUS_CODES, connection_given, environ_key

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
# Socket errors that mean the client went away (or took too long): closed quietly, as a reset is.
CLIENT_GONE_ERRNOS = frozenset({errno.EPIPE, errno.ECONNRESET, errno.ETIMEDOUT})
# An X-Request-ID taken as the router sent it: Heroku's rule (20 to 200 letters, digits, +, /, = or -),
# safe in a header and a log line; any other is replaced by a new id.
_REQUEST_ID = re.compile(r"[A-Za-z0-9+/=-]{20,200}")
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"  # the interim answer to Expect: 100-continue
# The OS's poll(), without the 1024-descriptor limit of select() (gevent's select() calls the real one).
_poll = monkey.get_original("select", "poll")

access_log = logging.getLogger("growth_gevent.access")
http_log = logging.getLogger("growth_gevent.http")


class _DeadlineReader(io.RawIOBase):
    """The socket as the connection reads it, every read bounded by the connection's deadline.

    A deadline, not a timeout per read: a client that sends a byte a second never hits a timeout
    per read. While a body is read, each byte received moves the deadline on by 1/GROWTH_BODY_MIN_RATE
    seconds, up to the body's own deadline (mod_reqtimeout's MinRate). While the server is draining, an
    idle connection reads only what has already arrived.
    """

    def __init__(self, sock, connection):
        self._sock = sock
        self._connection = connection

    def readable(self):
        return True

    def readinto(self, buffer):
        connection = self._connection
        if connection.idle and connection.server.draining:
            remaining = 0.0
        else:
            remaining = connection.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(errno.ETIMEDOUT, "the client took too long")
        self._sock.settimeout(remaining)
        connection.waiting = True
        try:
            received = self._sock.recv_into(buffer)
            connection.last_received = time.monotonic()
            if connection.body_deadline is not None:
                connection.deadline = min(connection.deadline + received * connection.server.body_seconds_per_byte,
                                          connection.body_deadline)
            return received
        except BlockingIOError:
            raise TimeoutError(errno.ETIMEDOUT, "the server is shutting down") from None
        finally:
            connection.waiting = False


class Connection:
    """A client connection: its socket, its deadlines, and the request being answered on it."""

    body: SizedBody | ChunkedBody  # the request's body, from its head on

    def __init__(self, sock, address, server):
        self.socket = sock
        self.client_address = address
        self.server = server
        self.rfile = io.BufferedReader(_DeadlineReader(sock, self), READ_BUFFER_BYTES)
        self.deadline = 0.0
        self.body_deadline = None  # while a request's body may be read: the end of GROWTH_BODY_TIMEOUT
        # True while blocked on the client: between requests, or mid-head or mid-body.
        self.waiting = False
        # True while no byte of a request is owed: before a request's first byte, or lingering.
        self.idle = True
        self.last_received = time.monotonic()  # when a byte last arrived (or the connection was accepted)
        self.requests = 0
        self.remote_port = str(address[1])
        self.request_id = ""  # the X-Request-ID of the request being served
        # The request being answered, and its response: set by _serve_request and start_response.
        self.method = self.target = None
        self.http_1_0 = False
        self.close_after = False  # the connection closes once this response is sent
        self.code = 0  # the response's status code, 0 before start_response
        self.response_head = b""  # the status line and headers, sent with the body's first bytes
        self.headers_sent = False
        self.content_length_given = False
        self.chunked = False
        # What the application returned: a list's length is the Content-Length.
        self.result: Iterable[bytes] | None = None
        self.bytes_sent = 0

    def handle(self):
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

    def _serve_request(self):
        """Read one request and answer it; True when the connection is kept for the next one."""
        server = self.server
        # The first request of a connection gets the header timeout to start; later ones the
        # keep-alive timeout. Running out of either before a byte arrives closes quietly.
        self.deadline = time.monotonic() + (server.keepalive_timeout if self.requests else server.header_timeout)
        self.body_deadline = None
        # The last request's id stays set while idle: nothing is logged on this greenlet until the next
        # request's head is read (or refused), which sets its own.
        self.method = self.target = None
        self.code = 0
        self.idle = True
        try:
            if not self.rfile.peek(1):
                return False
        except OSError:
            return False
        self.idle = False
        started = time.time()
        self.deadline = time.monotonic() + server.header_timeout
        self.requests += 1
        try:
            head = parse_head(self.rfile, server.max_header_bytes)
        except Refusal as error:
            self._answer_refusal(error, started)
            return False
        except OSError:  # the client reset the connection mid-head
            return False
        now = time.monotonic()
        self.body_deadline = now + server.body_timeout
        self.deadline = now + server.body_grace  # then earned by the bytes that arrive
        environ = self._environ(head)
        self._run_application(environ)
        if server.access_log:
            self._log_request(started)
        if not self.close_after:
            return True
        if not self.body.finished:
            # A client out of time for its body (a 408) gets no more in a lingering close.
            self._linger(LINGER_SECONDS if time.monotonic() < self.deadline else 0)
        return False

    def _environ(self, head):
        """The WSGI environ of a parsed head: its fields as CGI names, its body as ``wsgi.input``."""
        line = head.request_line
        self.method, self.target, version = line.method, line.target, line.version
        environ = self.server.environ.copy()  # the keys every request shares, made once by the server
        environ["REMOTE_ADDR"], environ["REMOTE_PORT"] = self.client_address[0], self.remote_port
        path, _, query = self.target.partition("?")
        environ["REQUEST_METHOD"] = self.method
        environ["PATH_INFO"] = unquote(path, encoding="latin-1") if "%" in path else path
        environ["QUERY_STRING"] = query
        environ["SERVER_PROTOCOL"] = version
        connection = expect = None
        offered = []
        for name, value in head.fields:
            key = ENVIRON_KEYS.get(name) or environ_key(name)
            if key is None:
                continue
            if key == "HTTP_X_REQUEST_ID":
                offered.append(value)
            elif key == "HTTP_CONNECTION":
                connection = value.lower()
            elif key == "HTTP_EXPECT":
                expect = value
            previous = environ.get(key)
            if previous is None:
                environ[key] = value
            else:
                environ[key] = f"{previous}; {value}" if key == "HTTP_COOKIE" else f"{previous},{value}"
        self.http_1_0 = version == "HTTP/1.0"
        self.close_after = connection != "keep-alive" if self.http_1_0 else connection == "close"
        self._serve_as(offered[0] if len(offered) == 1 and _REQUEST_ID.fullmatch(offered[0]) else _new_request_id())
        environ["wsgi.input"] = self.body = open_body(
            head.framing, self.rfile, self.server.max_body_bytes,
            self._send_continue if expect == "100-continue" and not self.http_1_0 else None)
        return environ

    def _serve_as(self, identifier):
        self.request_id = identifier
        request_id.set(identifier)

    def _send_continue(self):
        # Asked for the body: the client that waits for a 100 may send it now (unless answered already).
        if not self.headers_sent:
            self._sendall(_CONTINUE)

    def _run_application(self, environ):
        self.headers_sent = self.chunked = False
        self.bytes_sent = 0
        self.result = None
        try:
            self.result = self.server.application(environ, self.start_response)
            for data in self.result:
                if data:
                    self.write(data)
            if not self.headers_sent:
                self.write(b"")
            if self.chunked:
                self._sendall(b"0\r\n\r\n")
        except OSError as error:
            if error.errno not in CLIENT_GONE_ERRNOS:
                self._application_failed()
            self.close_after = True
        except Exception:
            self._application_failed()
        finally:
            close = getattr(self.result, "close", None)
            self.result = None
            if close is not None:
                close()

    def _application_failed(self):
        http_log.exception("error while serving %s %s", self.method, self.target)
        self.close_after = True
        if self.headers_sent:
            return
        body = message_body(APPLICATION_FAILED)
        try:
            self.start_response(status_line(500), [
                ("Content-Type", "application/json"), ("X-Content-Type-Options", "nosniff"), ("Connection", "close"),
                ("Content-Length", str(len(body)))])
            self.write(body)
        except OSError:
            pass

    def start_response(self, status, headers, exc_info=None):
        """PEP 3333's: the response head is checked and encoded here, and sent with the first bytes of
        the body."""
        if exc_info is not None and self.headers_sent:
            raise exc_info[1].with_traceback(exc_info[2])
        server = self.server
        # The headers joined in C, one "Name: value" a line; the names that matter here are found in that text
        # lower-cased, rather than by a loop over the headers (only a Connection header's value is read).
        lines = "\r\n".join(map(": ".join, headers))
        lowered = "\n" + lines.lower()
        given_connection = connection_given(headers) if "\nconnection:" in lowered else None
        self.content_length_given = "\ncontent-length:" in lowered
        added = ""
        # A response before the body was read whole ends the connection: the rest of the body would
        # otherwise be read as the next request (after Expect: 100-continue it never comes).
        if given_connection is None and (server.draining or not self.body.finished):
            added = "Connection: close\r\n"
            given_connection = "close"
        if given_connection == "close":
            self.close_after = True
        elif given_connection is None and self.http_1_0:
            added = "Connection: close\r\n" if self.close_after else "Connection: keep-alive\r\n"
        lines = f"HTTP/1.1 {status}\r\n{lines}\r\n{added}" if headers else f"HTTP/1.1 {status}\r\n{added}"
        # One CR and one LF per line, else a name or value carries a line break (response splitting).
        count = len(headers) + 1 + bool(added)
        if lines.count("\n") != count or lines.count("\r") != count:
            raise ValueError("a line break in the response status or headers")
        self.code = STATUS_CODES.get(status) or int(status[:3])
        self.response_head = lines.encode("latin-1")
        return self.write

    def write(self, data):
        """PEP 3333's ``write``, and how the result's bytes are sent: the head with the first of them."""
        if self.headers_sent:
            if self.chunked:
                data = b"%x\r\n%s\r\n" % (len(data), data) if data else b""
            if data:
                self._sendall(data)
            return
        if not self.code:
            raise RuntimeError("the application did not call start_response()")
        keep_alive = b"" if self.close_after else self.server.keep_alive_header
        framing = b""
        if not self.content_length_given and self.code not in (204, 304) and self.method != "HEAD":
            result = self.result
            if result is not None and hasattr(result, "__len__"):  # all of it is known: its length
                framing = b"Content-Length: %d\r\n" % sum(map(len, result))
            elif not self.http_1_0:
                framing = b"Transfer-Encoding: chunked\r\n"
                self.chunked = True
                data = b"%x\r\n%s\r\n" % (len(data), data) if data else b""
            else:  # an HTTP/1.0 body of unknown length ends when the connection does
                self.close_after = True
        self.headers_sent = True
        # The whole head and the body's first bytes in one formatting, for one send.
        self._sendall(b"%sX-Request-ID: %s\r\n%sDate: %s\r\n%s\r\n%s" % (
            self.response_head, self.request_id.encode(), keep_alive, http_date(), framing, data))

    def _sendall(self, data):
        sock = self.socket
        sock.settimeout(SEND_TIMEOUT_SECONDS)
        try:
            # A send first, which takes all of an answer that fits the send buffer (most do): gevent's sendall
            # asks the kernel for the buffer's size before sending, a system call more per response.
            sent = sock.send(data)
            if sent < len(data):
                sock.sendall(memoryview(data)[sent:])
        except TimeoutError:
            raise TimeoutError(errno.ETIMEDOUT, "the client did not read the response in time") from None
        self.bytes_sent += len(data)

    def _answer_refusal(self, error, started):
        """A request that could not be read: answer it, then close the lingering way, since whatever the
        client sent after it cannot be trusted to be a request."""
        self._serve_as(_new_request_id())
        http_log.info("bad request from %s: %s", self.client_address[0], error)
        self.code = error.status
        try:
            self.socket.settimeout(SEND_TIMEOUT_SECONDS)
            response = raw_response(error.status, str(error), b"X-Request-ID: %s\r\n" % self.request_id.encode())
            self.socket.sendall(response)
        except OSError:
            return
        self.bytes_sent = len(response)
        if self.server.access_log:
            self._log_request(started)
        self._linger(LINGER_SECONDS)

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

    def _log_request(self, started):
        # One logfmt line per request, when the access log is on (its callers ask: a call less when it is off).
        access_log.info("", extra={"fields": {
            "method": self.method or "-", "path": self.target or "-", "status": str(self.code or "000"),
            "duration_ms": f"{(time.time() - started) * 1000:.3f}", "bytes": self.bytes_sent,
            "remote": self.client_address[0]}})

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
    # unique, not secret, and this costs a fraction of uuid.uuid4().hex (docs/performance.md#request-ids; forked workers
    # get their own: random reseeds in a child after fork).
    return random.getrandbits(128).to_bytes(16).hex()
