"""The exchange of one request on a connection: ``Exchange`` builds its WSGI environ, gives the application
``start_response`` and ``write`` (PEP 3333's), frames and sends the response, and answers a 500 when the
application fails before its response. The connection that carries it (its socket, deadlines, keep-alive,
lingering close and drain) is handler.py's: the split of uvicorn's ``H11Protocol`` and its
``RequestResponseCycle``, and of gunicorn's ``Request`` and ``Response`` apart from its worker's connection.

- the environ built once from the parsed head (a copy of the server's keys, the client's address, the fields
  as CGI names, ``wsgi.input`` the body reader); ``Expect: 100-continue`` answered at the body's first read;
- an ``X-Request-ID`` on every response: the router's if it sent a well-formed one, else a new one; the
  lines logged while serving the request carry it (``logs.request_id``);
- the status line and headers written with the body's first bytes in one send, the ``Date`` made once a
  second; a body of unknown length chunked on HTTP/1.1, ended by closing the connection on HTTP/1.0.
"""

import errno
import logging
import random
import re
import time
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..core.logs import request_id
from .bodies import ChunkedBody, SizedBody, open_body
from .head import Head, Refusal
from .responses import APPLICATION_FAILED, http_date, message_body, raw_response, status_line
from .wsgi import ENVIRON_KEYS, STATUS_CODES, connection_given, environ_key

if TYPE_CHECKING:
    from .handler import Connection

# nginx's send_timeout: a client that reads nothing of a response for this long is dropped.
SEND_TIMEOUT_SECONDS = 60.0
# Socket errors that mean the client went away (or took too long): closed quietly, as a reset is.
CLIENT_GONE_ERRNOS = frozenset({errno.EPIPE, errno.ECONNRESET, errno.ETIMEDOUT})
# An X-Request-ID taken as the router sent it: Heroku's rule (20 to 200 letters, digits, +, /, = or -),
# safe in a header and a log line; any other is replaced by a new id.
_REQUEST_ID = re.compile(r"[A-Za-z0-9+/=-]{20,200}")
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"  # the interim answer to Expect: 100-continue
# The fields the exchange reads itself, besides putting them in the environ, and None (a name without a key):
# one test a field for the others.
_READ_HERE = frozenset({"HTTP_X_REQUEST_ID", "HTTP_CONNECTION", "HTTP_EXPECT", None})

access_log = logging.getLogger("growth_gevent.access")
http_log = logging.getLogger("growth_gevent.http")

ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]


class Exchange:
    """One request on a connection and its response, from the request's first byte until its answer is sent
    (or refused). One object a connection, its fields set anew for each request: cheaper than one a request
    (docs/http.md). What the connection reads of it once answered: ``close_after`` and ``body.finished``."""

    __slots__ = ("connection", "server", "started", "request_id", "method", "target", "http_1_0", "close_after",
                 "code", "response_head", "headers_sent", "content_length_given", "chunked", "result",
                 "bytes_sent", "body", "remote_addr")

    def __init__(self, connection: "Connection") -> None:
        self.connection = connection
        self.server = connection.server
        self.started = 0.0  # time.time() at the request's first byte, for the access log's duration
        self.request_id = ""
        self.method: str | None = None  # None until the head is read
        self.target: str | None = None
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
        self.body: SizedBody | ChunkedBody  # the request's body, from its head on
        self.remote_addr = connection.client_address[0]  # the client's address, a router's forwarded one

    def _environ(self, head: Head, arrived: int) -> dict[str, Any]:
        """The WSGI environ of a parsed head: its fields as CGI names, its body as ``wsgi.input`` (``arrived``
        of its bytes already in the connection's reader)."""
        line = head.request_line
        self.method, self.target, version = line.method, line.target, line.version
        connection = self.connection
        environ: dict[str, Any] = self.server.environ.copy()  # the keys every request shares, made once
        environ["REMOTE_PORT"] = connection.remote_port
        path, _, query = line.target.partition("?")
        environ["REQUEST_METHOD"] = line.method
        environ["PATH_INFO"] = unquote(path, encoding="latin-1") if "%" in path else path
        environ["QUERY_STRING"] = query
        environ["SERVER_PROTOCOL"] = version
        connection_field = expect = None
        offered = []
        known_key = ENVIRON_KEYS.get  # bound once: a call a field cheaper than the method looked up each time
        for name, value in head.fields:
            key = known_key(name) or environ_key(name)
            if key in _READ_HERE:
                if key is None:  # a name that has no key
                    continue
                if key == "HTTP_X_REQUEST_ID":
                    offered.append(value)
                elif key == "HTTP_CONNECTION":
                    connection_field = value.lower()
                else:
                    expect = value
            if key in environ:
                previous = environ[key]
                environ[key] = f"{previous}; {value}" if key == "HTTP_COOKIE" else f"{previous},{value}"
            else:
                environ[key] = value  # type: ignore[index]  # a str: a None went on above, which mypy cannot tell
        remote = connection.client_address[0]
        router = connection.router
        if router is not None:  # a trusted router: the client its X-Forwarded-For names (clients.py)
            forwarded = environ.get("HTTP_X_FORWARDED_FOR")
            if forwarded:
                remote = router.client(remote, forwarded)
        environ["REMOTE_ADDR"] = self.remote_addr = remote
        self.http_1_0 = version == "HTTP/1.0"
        self.close_after = connection_field != "keep-alive" if self.http_1_0 else connection_field == "close"
        self._serve_as(offered[0] if len(offered) == 1 and _REQUEST_ID.fullmatch(offered[0]) else new_request_id())
        environ["wsgi.input"] = self.body = open_body(
            head.framing, connection.rfile, self.server.max_body_bytes,
            self._send_continue if expect == "100-continue" and not self.http_1_0 else None, arrived)
        return environ

    def _serve_as(self, identifier: str) -> None:
        self.request_id = identifier
        request_id.set(identifier)

    def _send_continue(self) -> None:
        # Asked for the body: the client that waits for a 100 may send it now (unless answered already).
        if not self.headers_sent:
            self._sendall(_CONTINUE)

    def serve(self, head: Head, arrived: int) -> None:
        """Answer the request of ``head``, ``arrived`` bytes of whose body came with it: its environ to the
        application, its response to the client."""
        self.code = self.bytes_sent = 0
        self.headers_sent = self.chunked = False
        environ = self._environ(head, arrived)
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

    def _application_failed(self) -> None:
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

    def start_response(self, status: str, headers: list[tuple[str, str]],
                       exc_info: ExcInfo | None = None) -> Callable[[bytes], None]:
        """PEP 3333's: the response head is checked and encoded here, and sent with the first bytes of
        the body."""
        if exc_info is not None and self.headers_sent:
            raise exc_info[1].with_traceback(exc_info[2])
        # The headers joined in C, one "Name: value" a line; the names that matter here are found in that text
        # lower-cased, rather than by a loop over the headers (only a Connection header's value is read).
        lines = "\r\n".join(map(": ".join, headers))
        lowered = "\n" + lines.lower()
        given_connection = connection_given(headers) if "\nconnection:" in lowered else None
        self.content_length_given = "\ncontent-length:" in lowered
        added = ""
        # A response before the body was read whole ends the connection: the rest of the body would
        # otherwise be read as the next request (after Expect: 100-continue it never comes).
        if given_connection is None and (self.server.draining or not self.body.finished):
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

    def write(self, data: bytes) -> None:
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

    def _sendall(self, data: bytes) -> None:
        sock = self.connection.socket
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

    def refuse(self, error: Refusal) -> bool:
        """Answer a request whose head could not be read with its refusal; False when the client is gone."""
        self._serve_as(new_request_id())
        self.remote_addr = self.connection.client_address[0]  # no head: no forwarded address to believe
        http_log.info("bad request from %s: %s", self.remote_addr, error)
        self.method = self.target = None
        self.code = error.status
        self.bytes_sent = 0
        try:
            self._sendall(raw_response(error.status, str(error), b"X-Request-ID: %s\r\n" % self.request_id.encode()))
        except OSError:
            return False
        return True

    def log(self) -> None:
        # One logfmt line per request, when the access log is on (its callers ask: a call less when it is off).
        access_log.info("", extra={"fields": {
            "method": self.method or "-", "path": self.target or "-", "status": str(self.code or "000"),
            "duration_ms": f"{(time.time() - self.started) * 1000:.3f}", "bytes": self.bytes_sent,
            "remote": self.remote_addr}})


def new_request_id() -> str:
    # 128 random bits as 32 hex digits, as a UUID4's; from random, not os.urandom: an id needs to be
    # unique, not secret, and this costs a fraction of uuid.uuid4().hex (docs/performance.md#request-ids; forked workers
    # get their own: random reseeds in a child after fork).
    return random.getrandbits(128).to_bytes(16).hex()
