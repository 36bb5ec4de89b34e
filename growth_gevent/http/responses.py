"""What every error answer shares, whoever writes it (falcon's error serializer or the HTTP server):
the ``{"msg": ...}`` body and the ``Retry-After`` a client is told."""

import time
from email.utils import formatdate

import ujson

# What a client is told to wait before retrying a request refused for want of room now.
RETRY_AFTER_SECONDS = 1


def message_body(message: str) -> bytes:
    """The JSON body of an error: ``{"msg": message}``, as the challenge answers."""
    return ujson.dumps({"msg": message}, escape_forward_slashes=False).encode()


# The answers the HTTP server writes itself, on the socket, where no application runs.
_STATUS_LINES = {400: "400 Bad Request", 408: "408 Request Timeout", 414: "414 URI Too Long",
                 431: "431 Request Header Fields Too Large", 500: "500 Internal Server Error",
                 503: "503 Service Unavailable"}


def raw_response(status: int, message: str, headers: bytes = b"") -> bytes:
    """A whole HTTP/1.1 response with a ``{"msg": message}`` body, that closes the connection."""
    body = message_body(message)
    return (b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\n"
            b"Connection: close\r\n%s"
            b"Content-Length: %d\r\n\r\n%s" % (_STATUS_LINES[status].encode(), headers, len(body), body))


_date: tuple[int, bytes] = (0, b"")


def http_date() -> bytes:
    """The ``Date`` of a response now (RFC 9110 §6.6.1), made once a second rather than once a response."""
    global _date
    second = int(time.time())
    if _date[0] != second:
        _date = (second, formatdate(second, usegmt=True).encode())
    return _date[1]


def status_line(status: int) -> str:
    return _STATUS_LINES[status]


def too_many_connections(headers: bytes = b"") -> bytes:
    """The answer to a connection past GROWTH_MAX_CONNECTIONS."""
    return raw_response(503, "too many connections; retry later",
                        b"Retry-After: %d\r\n%s" % (RETRY_AFTER_SECONDS, headers))
# What the server answers itself when the application fails before its response.
APPLICATION_FAILED = "internal server error"
