"""The gevent pywsgi server, hardened for the open internet.

What this module adds to pywsgi:

- strict HTTP/1.1 framing (RFC 9112 §2-§6): a header block that could be read two ways is a ``400``
  and a closed connection, never a guess: a field line without a colon, white space in or after a
  field name, obsolete line folding, control characters in a value, more than one Content-Length or
  one that is not plain digits, a Transfer-Encoding other than exactly ``chunked`` or together with a
  Content-Length, no Host or several on HTTP/1.1; a header block over the limit is a ``431``;
- deadlines on every read: the first byte of a request (keep-alive idle time), its line and headers
  (from their first byte), its body (the whole of it), a lingering close; and on every response write;
- a cap on connections below the descriptor limit (past it ``503``), and a clear log line instead of
  a traceback when descriptors run out anyway;
- a response sent before its request body was read whole closes the connection the way nginx does
  (lingering close): answer, shut down the write side, discard what the client still sends for a
  bounded time, then close, so that clients that send the whole body first still read the answer;
- graceful shutdown that waits only for requests in flight: idle connections, and those still
  waiting for a client's headers or body, are closed at once.

pywsgi internals this relies on, checked by ``tests/test_server_internals.py`` so that a gevent
upgrade that changes them fails loudly: ``WSGIHandler.__init__(sock, address, server, rfile)``,
``read_requestline``, ``read_request``, ``MessageClass``, ``handle_one_request`` (its ``None``/``True``/
tuple results), ``_handle_client_error``, ``_send_error_response_if_possible``, ``_write_with_headers``,
``_sendall``, ``ignored_socket_errors``, the attributes ``wsgi_input`` (``Input.position``,
``content_length``, ``chunked_input``, ``chunk_length``, ``_chunked_input_error``), ``close_connection``,
``response_length``, ``status``, ``time_start``/``time_finish``, ``OldMessage``, and
``StreamServer.do_read``.
"""

import errno
import io
import logging
import re
import resource
import select
import socket
import time

import gevent
from gevent.baseserver import parse_address
from gevent.pool import Pool
from gevent.pywsgi import MAX_REQUEST_LINE, OldMessage, WSGIHandler, WSGIServer

from .responses import RETRY_AFTER_SECONDS, message_body

# Above the default of 128 so that 1000 clients connecting at once are queued, not dropped.
LISTEN_BACKLOG = 2048
# Descriptors kept for what is not a client connection: the listener, log files, Redis, snapshots.
RESERVED_DESCRIPTORS = 100
# Connections over the cap that are still answered 503; past these, new ones wait in the backlog.
REFUSED_CONNECTIONS_ANSWERED = 64
# nginx's send_timeout: a client that reads nothing of a response for this long is dropped.
SEND_TIMEOUT_SECONDS = 60.0
# Lingering close (nginx's lingering_time, lingering_timeout), bounded in bytes too.
LINGER_SECONDS = 10.0
LINGER_IDLE_SECONDS = 2.0
LINGER_MAX_BYTES = 64 * 1024 * 1024
# How long a refused connection's request is discarded before closing, so the 503 is read.
REFUSAL_LINGER_SECONDS = 1.0
MAX_HEADER_FIELDS = 100  # gunicorn's limit_request_fields
READ_BUFFER_BYTES = 64 * 1024
# One log line per this many seconds for events a flood repeats (refusals, descriptor exhaustion).
NOISY_LOG_SECONDS = 10.0
# accept() failures that mean "out of a resource for now", not "broken".
_RESOURCE_ERRNOS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
ACCEPT_PAUSE_SECONDS = 0.1

log = logging.getLogger("growth_gevent")
access_log = logging.getLogger("growth_gevent.access")
http_log = logging.getLogger("growth_gevent.http")

_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_REQUEST_LINE = re.compile(_TOKEN.decode() + r" [^\x00-\x20\x7f]+ HTTP/1\.[01]\r?\n?")
# field-line = field-name ":" OWS field-value OWS, the value without control characters but HTAB.
_FIELD_LINE = re.compile(rb"(" + _TOKEN + rb"):[ \t]*([^\x00-\x08\x0a-\x1f\x7f]*?)[ \t]*\r?\n")
_DIGITS = re.compile(r"[0-9]+")


def _raw_json_response(status, message, headers=b""):
    body = message_body(message)
    return (b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nConnection: close\r\n%s"
            b"Content-Length: %d\r\n\r\n%s" % (status.encode(), headers, len(body), body))


_STATUS_LINES = {"400": "400 Bad Request", "408": "408 Request Timeout", "414": "414 URI Too Long",
                 "431": "431 Request Header Fields Too Large"}
_APPLICATION_ERRORS = {
    400: ("400 Bad Request", "malformed request body"),
    500: ("500 Internal Server Error", "internal server error"),
}
_OVERLOADED = _raw_json_response("503 Service Unavailable", "too many connections; retry later",
                                 b"Retry-After: %d\r\n" % RETRY_AFTER_SECONDS)


class BadRequest(ValueError):
    """A request that cannot be read one way only; ``status`` is what it is answered with."""

    def __init__(self, message, status="400"):
        super().__init__(message)
        self.status = status


def _status_code(status):
    # bytes after an application's response, the bare code as str after a protocol error.
    if isinstance(status, bytes):
        status = status.decode("latin-1")
    return (status or "000").split(" ", 1)[0]


class _DeadlineReader(io.RawIOBase):
    """The socket as pywsgi's ``rfile`` reads it, every read bounded by the handler's deadline.

    A deadline, not a timeout per read: a client that sends a byte a second never hits a timeout
    per read. While the server is draining, only what has already arrived is read.
    """

    def __init__(self, sock, handler):
        self._sock = sock
        self._handler = handler

    def readable(self):
        return True

    def readinto(self, buffer):
        handler = self._handler
        if handler.server.draining:
            remaining = 0.0
        else:
            remaining = handler.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(errno.ETIMEDOUT, "the client took too long")
        self._sock.settimeout(remaining)
        handler.waiting = True
        try:
            return self._sock.recv_into(buffer)
        except BlockingIOError:
            raise TimeoutError(errno.ETIMEDOUT, "the server is shutting down") from None
        finally:
            handler.waiting = False


class GrowthHandler(WSGIHandler):
    """pywsgi's handler with strict framing, deadlines, lingering close and what shutdown needs."""

    # Timeouts are client behaviour, not server faults: quiet, like a reset.
    ignored_socket_errors = WSGIHandler.ignored_socket_errors + (errno.ETIMEDOUT,)
    deadline = 0.0
    # True while blocked on the client: between requests, or mid-headers or mid-body.
    waiting = False
    requests = 0

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
        # delayed ACK of the first: ~40 ms per keep-alive request.
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connections.add(self)
        try:
            super().handle()
        finally:
            connections.discard(self)

    def _refuse(self):
        self.server.noisy_log("connections", "connection limit reached (%d): answering 503 to new connections",
                              self.server.max_connections)
        try:
            self.socket.settimeout(SEND_TIMEOUT_SECONDS)
            self.socket.sendall(_OVERLOADED)
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
        try:
            if not self.rfile.peek(1):
                return ""
        except OSError:
            return ""
        self.deadline = time.monotonic() + server.header_timeout
        self.requests += 1
        try:
            # pywsgi answers 414 to a line of MAX_REQUEST_LINE bytes or more.
            return self.rfile.readline(MAX_REQUEST_LINE).decode("latin-1")
        except TimeoutError:
            raise BadRequest("request line not received in time", "408") from None

    def read_request(self, raw_requestline):
        if not _REQUEST_LINE.fullmatch(raw_requestline):
            raise BadRequest("malformed request line")
        super().read_request(raw_requestline)
        self.deadline = time.monotonic() + self.server.body_timeout
        return True

    def MessageClass(self, rfile, *args):  # noqa: N802 (pywsgi's name)
        """Read, check and parse the header block (pywsgi's parser is lenient)."""
        fields = _read_header_block(rfile, self.server.max_header_bytes - len(self.requestline))
        headers = OldMessage()
        framing = {}
        for name, value in fields:
            headers[name] = value
            lower = name.lower()
            if lower in ("content-length", "transfer-encoding", "host"):
                framing.setdefault(lower, []).append(value)
        _check_framing(framing, self.request_version)
        return headers

    def handle_one_request(self):
        try:
            result = super().handle_one_request()
        except BadRequest as error:  # raised where pywsgi does not catch: the request line
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
            if result[0] == "414":
                response = _raw_json_response(_STATUS_LINES["414"], "request line too long")
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
            self._linger(LINGER_SECONDS)
        return result

    def _handle_client_error(self, error):
        if isinstance(error, BadRequest):
            status, message = error.status, str(error)
        elif isinstance(error, TimeoutError):
            status, message = "408", "request not received in time"
        else:
            status, message = "400", "malformed HTTP request"
        http_log.info("bad request from %s: %s", self.client_address[0], message)
        return status, _raw_json_response(_STATUS_LINES[status], message)

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
        if self.close_connection:
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
        self.waiting = True  # shutdown may close it at once
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
        status, message = _APPLICATION_ERRORS[error_code]
        body = message_body(message)
        try:
            self.start_response(status, [("Content-Type", "application/json"), ("Connection", "close"),
                                         ("Content-Length", str(len(body)))])
            self.write(body)
        except OSError:
            self.close_connection = True

    def close_if_waiting(self):
        """At shutdown: a connection waiting on its client (idle, or mid-headers or mid-body) with
        nothing more arrived is not in flight; close it so that shutdown need not wait for the client.
        What has arrived is still read (see _DeadlineReader), so a request sent whole is answered."""
        if self.waiting and not select.select([self.socket], [], [], 0)[0]:
            try:
                self.socket.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _read_header_block(rfile, budget):
    """The header block's ``[(name, value), ...]``, read within ``budget`` bytes; BadRequest if
    it is not strictly well formed (431 past the budget or MAX_HEADER_FIELDS)."""
    fields = []
    while True:
        try:
            line = rfile.readline(max(budget, 0) + 1)
        except TimeoutError:
            raise BadRequest("request headers not received in time", "408") from None
        budget -= len(line)
        if budget < 0:
            raise BadRequest("request header block is too large", "431")
        if not line.endswith(b"\n"):
            raise BadRequest("request headers end before the blank line")
        if line in (b"\r\n", b"\n"):
            return fields
        match = _FIELD_LINE.fullmatch(line)
        if match is None:
            raise BadRequest(_field_line_problem(line))
        if len(fields) == MAX_HEADER_FIELDS:
            raise BadRequest(f"more than {MAX_HEADER_FIELDS} header fields", "431")
        fields.append((match.group(1).decode("latin-1"), match.group(2).decode("latin-1")))


def _field_line_problem(line):
    if line[:1] in (b" ", b"\t"):
        return "obsolete line folding in the request headers"
    if b":" not in line:
        return "a request header line without a colon"
    if not re.fullmatch(_TOKEN, line.split(b":", 1)[0]):
        return "a request header name with white space or a separator"
    return "a control character in a request header value"


def _check_framing(framing, version):
    """One way only to tell where the body ends and whose host the request is for (RFC 9112 §6.3)."""
    lengths = framing.get("content-length", ())
    codings = framing.get("transfer-encoding", ())
    hosts = framing.get("host", ())
    if len(lengths) > 1:
        raise BadRequest("more than one Content-Length")
    if lengths and not _DIGITS.fullmatch(lengths[0]):
        raise BadRequest("Content-Length must be digits")
    if codings:
        if len(codings) > 1 or codings[0].lower() != "chunked":
            raise BadRequest("Transfer-Encoding must be exactly chunked")
        if lengths:
            raise BadRequest("Content-Length and Transfer-Encoding together")
        if version != "HTTP/1.1":
            raise BadRequest("Transfer-Encoding needs HTTP/1.1")
    if len(hosts) > 1 or (version == "HTTP/1.1" and not hosts):
        raise BadRequest("an HTTP/1.1 request needs exactly one Host header")


class GrowthServer(WSGIServer):
    handler_class = GrowthHandler

    def __init__(self, listener, application, config, **kwargs):
        self.max_connections = connection_cap(config.max_connections)
        super().__init__(listener, application, spawn=Pool(self.max_connections + REFUSED_CONNECTIONS_ANSWERED),
                         log=None, error_log=http_log, **kwargs)
        self.access_log = config.access_log
        self.header_timeout = config.header_timeout
        self.body_timeout = config.body_timeout
        self.keepalive_timeout = config.keepalive_timeout
        self.max_header_bytes = config.max_header_bytes
        self.connections = set()
        self.draining = False
        self._last_logged = {}

    def do_read(self):
        try:
            return super().do_read()
        except OSError as error:
            if error.errno not in _RESOURCE_ERRNOS:
                raise
        # Out of descriptors or memory: say so once in a while, and pause accepting instead of
        # spinning on accept() (the connection waits in the backlog).
        self.noisy_log("accept", "cannot accept connections: %s; pausing accepting for %ss",
                       errno.errorcode.get(error.errno, error.errno), ACCEPT_PAUSE_SECONDS, level=logging.ERROR)
        self.stop_accepting()
        gevent.spawn_later(ACCEPT_PAUSE_SECONDS, self._resume_accepting)
        return None

    def _resume_accepting(self):
        if not self.closed and not self.draining:
            self.start_accepting()

    def noisy_log(self, kind, message, *args, level=logging.WARNING):
        """Log a line about ``kind`` at most once per NOISY_LOG_SECONDS, with how often it was repeated."""
        now = time.monotonic()
        last, repeated = self._last_logged.get(kind, (None, 0))
        if last is not None and now - last < NOISY_LOG_SECONDS:
            self._last_logged[kind] = (last, repeated + 1)
            return
        self._last_logged[kind] = (now, 0)
        log.log(level, message + (f" (and {repeated} more times)" if repeated else ""), *args)

    def drain(self, timeout):
        """Stop accepting, close connections that wait on their client, let requests in flight finish.

        Returns False when requests were still running after ``timeout`` seconds (they are killed).
        """
        self.draining = True
        self.close()
        log.info("shutting down: stopped accepting, finishing %d connections", len(self.connections))
        for handler in list(self.connections):
            handler.close_if_waiting()
        finished = self.pool.join(timeout=timeout)
        self.pool.kill(block=True, timeout=1)
        return finished


def connection_cap(configured):
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


def listen(config):
    """The listening socket, bound once: every worker process accepts on the same one."""
    family, address = parse_address((config.host, config.port))
    return GrowthServer.get_listener(address, LISTEN_BACKLOG, family)


def make_server(app, config, listener):
    # A fixed SERVER_NAME spares pywsgi a reverse-DNS lookup of the listening address.
    return GrowthServer(listener, app, config, environ={"SERVER_NAME": config.host})
