"""The request body as the application reads it (``wsgi.input``, whose ``read`` is all this service
calls): framed by the head's Content-Length or
chunked coding, with no socket (any ``io.BufferedReader``).

Each reader stops at its body's end, so what follows is the next request, and enforces GROWTH_MAX_BODY_BYTES
where the bytes arrive: a declared length over it, a chunk size over it, or chunks adding up past it are a
413 (``head.ContentTooLarge``) before those bytes are read. A malformed chunk, or a body that ends early,
is a 400 (``head.BadRequest``) naming its rule, as a head's refusals do. ``finished`` tells the server
whether the connection is at the next request, or has to be closed.
"""

import re
from collections.abc import Callable
from io import BufferedReader
from typing import Any

from .head import BadRequest, ContentTooLarge, Framing, RequestTimeout, check_chunk_size, read_fields

# A chunk-size line: 1 to 16 hex digits (2**64 - 1 at most), extensions (not read), CRLF (RFC 9112 §7.1).
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})(?:;[^\r\n]*)?\r\n")
MAX_CHUNK_SIZE_LINE = 8192  # pywsgi's bound on a size line with its extensions
MAX_TRAILER_BYTES = 8192


def open_body(framing: Framing, rfile: "BufferedReader[Any]", limit: int,
              on_first_read: Callable[[], None] | None = None, arrived: int = 0) -> "SizedBody | ChunkedBody":
    """The body that ``framing`` announces, read from ``rfile``, which holds ``arrived`` bytes of it already;
    ``on_first_read`` is called before its first byte is asked for (the server's ``100 Continue``), not at all
    for a body of no bytes."""
    if framing.chunked:
        return ChunkedBody(rfile, limit, on_first_read)
    length = framing.content_length or 0
    return SizedBody(rfile, length, limit, on_first_read, arrived >= length)


def _arrived(rfile: "BufferedReader[Any]", size: int) -> bytes:
    """At most ``size`` bytes of what has arrived, waiting for one if none has. The wait fills the reader's
    own buffer (peek), so nothing is allocated for bytes still to come: a body that has sent 1 byte of 8 MB
    holds 1 byte, not a pending read's room."""
    rfile.peek(1)
    return rfile.read1(size)


def _too_large(limit: int) -> ContentTooLarge:
    return ContentTooLarge(f"request body is larger than {limit} bytes", "body-too-large", limit)


class SizedBody:
    """A body of a Content-Length (none: no bytes). ``read(size)`` hands over at most ``size`` bytes of
    what has arrived, waiting only when nothing has, as a socket's ``recv`` does: the caller holds only
    bytes received (api/body_reader.py charges them to the body budget). ``arrived``: all of it is in
    ``rfile`` already (it came with the head), for ``read_arrived``."""

    __slots__ = ("_rfile", "_left", "_limit", "_on_first_read", "_arrived")

    def __init__(self, rfile: "BufferedReader[Any]", length: int, limit: int, on_first_read: Callable[[], None] | None,
                 arrived: bool = False):
        self._rfile = rfile
        self._left = length
        self._limit = limit
        self._on_first_read = on_first_read
        self._arrived = arrived  # stays true as it is read: reads only take from what is there

    @property
    def finished(self) -> bool:
        return self._left == 0

    def read(self, size: int | None = -1) -> bytes:
        left = self._left
        if not left or size == 0:
            return b""
        if left > self._limit:
            raise _too_large(self._limit)
        if self._on_first_read is not None:
            self._on_first_read()
            self._on_first_read = None
        whole = size is None or size < 0
        data = self._rfile.read(left) if size is None or size < 0 else _arrived(self._rfile, min(size, left))
        self._left = left - len(data)
        if not data or whole and self._left:
            raise BadRequest("request body ends before its Content-Length", "body-ended-early")
        return data

    def read_arrived(self, most: int) -> bytes | None:
        """What is left of the body, in one read that cannot wait, when all of it has arrived and it is at
        most ``most`` bytes (and the limit); else None, and nothing read."""
        left = self._left
        if not self._arrived or left > most or left > self._limit:
            return None
        if left and self._on_first_read is not None:
            self._on_first_read()
            self._on_first_read = None
        self._left = 0
        return self._rfile.read(left)


class ChunkedBody:
    """A body in chunked transfer coding, de-chunked; trailer fields are read by the head's rules and
    dropped."""

    __slots__ = ("_rfile", "_limit", "_on_first_read", "_chunk_left", "_received", "finished")

    def __init__(self, rfile: "BufferedReader[Any]", limit: int, on_first_read: Callable[[], None] | None):
        self._rfile = rfile
        self._limit = limit
        self._on_first_read = on_first_read
        self._chunk_left = 0  # bytes of the current chunk not read yet
        self._received = 0  # body bytes read so far, every chunk together
        self.finished = False

    def read(self, size: int | None = -1) -> bytes:
        """What is left, or with a ``size`` at most that much of one chunk, and of what has arrived: a read
        hands over what one chunk brings, as a socket's does."""
        if size == 0:
            return b""
        if self._on_first_read is not None:
            self._on_first_read()
            self._on_first_read = None
        if size is None:
            size = -1
        whole = size < 0
        parts = []
        while not self.finished:
            if not self._chunk_left:
                self._next_chunk()
                continue
            data = self._rfile.read(self._chunk_left) if whole else _arrived(self._rfile, min(size, self._chunk_left))
            if not data or whole and len(data) < self._chunk_left:
                raise BadRequest("request body ends inside a chunk", "body-ended-early")
            self._chunk_left -= len(data)
            if not self._chunk_left and self._rfile.read(2) != b"\r\n":
                raise BadRequest("a chunk's data is not followed by CRLF", "chunk-without-crlf")
            parts.append(data)
            if not whole:
                break
        return b"".join(parts)

    def _next_chunk(self) -> None:
        line = self._rfile.readline(MAX_CHUNK_SIZE_LINE)
        if not line:
            raise BadRequest("request body ends before its last chunk", "body-ended-early")
        match = _CHUNK_SIZE.fullmatch(line)
        if match is None:
            raise BadRequest("malformed chunk size line", "malformed-chunk-size")
        size = int(match.group(1), 16)
        check_chunk_size(size, self._limit)
        if self._received + size > self._limit:
            raise _too_large(self._limit)
        self._received += size
        if size:
            self._chunk_left = size
            return
        try:
            read_fields(self._rfile, MAX_TRAILER_BYTES)  # the trailer section, up to the body's blank line
        except RequestTimeout:
            raise TimeoutError("request body not received in time") from None
        self.finished = True
