"""The request head (request line and header fields), read strictly (RFC 9112 §2-§6), with no socket.

A head that could be read two ways is refused, never guessed at: a field line without a colon, white
space in or after a field name, obsolete line folding, a control character in a value, more than one
Content-Length or one that is not plain digits, a Transfer-Encoding other than exactly ``chunked`` or
together with a Content-Length, no Host or several on HTTP/1.1; a body chunk larger than any body
accepted is a 413 as soon as its size is read. Each refusal is typed by its status and
names the rule that refused it (``BadRequest.rule == "duplicate-content-length"``), so that the corpus
in ``tests/http/requests/`` pins which rule fired. ``parse_head`` reads a head from any binary file with
``readline``: the server's deadline-bound socket reader, or ``io.BytesIO`` in the corpus's tests, so the
corpus drives the very code that serves.
"""

import dataclasses
import re
from typing import BinaryIO

from ..core.records import MAX_REQUEST_LINE

MAX_HEADER_FIELDS = 100  # gunicorn's limit_request_fields

_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_REQUEST_LINE = re.compile(r"(" + _TOKEN.decode() + r") ([^\x00-\x20\x7f]+) (HTTP/1\.[01])\r?\n?")
# field-line = field-name ":" OWS field-value OWS, the value without control characters but HTAB.
_FIELD_LINE = re.compile(rb"(" + _TOKEN + rb"):[ \t]*([^\x00-\x08\x0a-\x1f\x7f]*?)[ \t]*\r?\n")
_DIGITS = re.compile(r"[0-9]+")


class Refusal(ValueError):
    """A request head answered with ``status`` and closed; ``rule`` names the rule that refused it."""

    status = 400

    def __init__(self, message: str, rule: str):
        super().__init__(message)
        self.rule = rule


class BadRequest(Refusal):
    status = 400


class RequestTimeout(Refusal):
    status = 408


class URITooLong(Refusal):
    status = 414


class HeaderFieldsTooLarge(Refusal):
    status = 431


class ContentTooLarge(Refusal):
    """A body that declares more than ``limit`` bytes."""

    status = 413

    def __init__(self, message: str, rule: str, limit: int):
        super().__init__(message, rule)
        self.limit = limit


@dataclasses.dataclass(frozen=True)
class RequestLine:
    method: str
    target: str
    version: str


@dataclasses.dataclass(frozen=True)
class Framing:
    """Where the body ends (a Content-Length, chunked, or no body) and the Host it is for."""

    content_length: int | None
    chunked: bool
    host: str | None


@dataclasses.dataclass(frozen=True)
class Head:
    request_line: RequestLine
    fields: list[tuple[str, str]]
    framing: Framing


def read_request_line(rfile: BinaryIO) -> str:
    """The request line as read (its line end included), decoded as Latin-1; 414 from MAX_REQUEST_LINE."""
    try:
        line = rfile.readline(MAX_REQUEST_LINE)
    except TimeoutError:
        raise RequestTimeout("request line not received in time", "request-line-timeout") from None
    if len(line) >= MAX_REQUEST_LINE:
        raise URITooLong("request line too long", "request-line-too-long")
    return line.decode("latin-1")


def check_request_line(line: str) -> RequestLine:
    """``METHOD SP target SP HTTP/1.x``, one space each: nothing else (HTTP/0.9, a TLS hello) is read."""
    match = _REQUEST_LINE.fullmatch(line)
    if match is None:
        raise BadRequest("malformed request line", "malformed-request-line")
    return RequestLine(*match.groups())


def read_fields(rfile: BinaryIO, budget: int) -> list[tuple[str, str]]:
    """The header block's ``[(name, value), ...]``, read within ``budget`` bytes up to its blank line."""
    fields: list[tuple[str, str]] = []
    while True:
        try:
            line = rfile.readline(max(budget, 0) + 1)
        except TimeoutError:
            raise RequestTimeout("request headers not received in time", "header-timeout") from None
        budget -= len(line)
        if budget < 0:
            raise HeaderFieldsTooLarge("request header block is too large", "header-block-too-large")
        if not line.endswith(b"\n"):
            raise BadRequest("request headers end before the blank line", "unterminated-header-block")
        if line in (b"\r\n", b"\n"):
            return fields
        match = _FIELD_LINE.fullmatch(line)
        if match is None:
            raise BadRequest(*_field_line_problem(line))
        if len(fields) == MAX_HEADER_FIELDS:
            raise HeaderFieldsTooLarge(f"more than {MAX_HEADER_FIELDS} header fields", "too-many-header-fields")
        fields.append((match.group(1).decode("latin-1"), match.group(2).decode("latin-1")))


def _field_line_problem(line: bytes) -> tuple[str, str]:
    if line[:1] in (b" ", b"\t"):
        return "obsolete line folding in the request headers", "obsolete-line-folding"
    if b":" not in line:
        return "a request header line without a colon", "field-line-without-colon"
    if not re.fullmatch(_TOKEN, line.split(b":", 1)[0]):
        return "a request header name with white space or a separator", "invalid-field-name"
    return "a control character in a request header value", "control-character-in-value"


def check_framing(fields: list[tuple[str, str]], version: str) -> Framing:
    """One way only to tell where the body ends and whose host the request is for (RFC 9112 §6.3)."""
    framing: dict[str, list[str]] = {"content-length": [], "transfer-encoding": [], "host": []}
    for name, value in fields:
        values = framing.get(name.lower())
        if values is not None:
            values.append(value)
    lengths, codings, hosts = framing["content-length"], framing["transfer-encoding"], framing["host"]
    if len(lengths) > 1:
        raise BadRequest("more than one Content-Length", "duplicate-content-length")
    if lengths and not _DIGITS.fullmatch(lengths[0]):
        raise BadRequest("Content-Length must be digits", "invalid-content-length")
    if codings:
        if len(codings) > 1 or codings[0].lower() != "chunked":
            raise BadRequest("Transfer-Encoding must be exactly chunked", "invalid-transfer-encoding")
        if lengths:
            raise BadRequest("Content-Length and Transfer-Encoding together", "content-length-with-transfer-encoding")
        if version != "HTTP/1.1":
            raise BadRequest("Transfer-Encoding needs HTTP/1.1", "transfer-encoding-before-http-1.1")
    if len(hosts) > 1:
        raise BadRequest("an HTTP/1.1 request needs exactly one Host header", "duplicate-host")
    if version == "HTTP/1.1" and not hosts:
        raise BadRequest("an HTTP/1.1 request needs exactly one Host header", "missing-host")
    return Framing(int(lengths[0]) if lengths else None, bool(codings), hosts[0] if hosts else None)


def check_chunk_size(size: int, limit: int) -> None:
    """A chunk larger than any body accepted is refused when its size line is read, not after its bytes."""
    if size > limit:
        raise ContentTooLarge(f"request body is larger than {limit} bytes", "chunk-too-large", limit)


def header_budget(max_header_bytes: int, request_line: str) -> int:
    """What is left of GROWTH_MAX_HEADER_BYTES for the fields once the request line is counted."""
    return max_header_bytes - len(request_line.rstrip())


def parse_head(rfile: BinaryIO, max_header_bytes: int) -> Head:
    """The head read from ``rfile`` up to its blank line (what follows is the body, left unread); a
    Refusal if it is not one the server takes."""
    line = read_request_line(rfile)
    request_line = check_request_line(line)
    fields = read_fields(rfile, header_budget(max_header_bytes, line))
    return Head(request_line, fields, check_framing(fields, request_line.version))
