"""The request head (request line and header fields), read strictly (RFC 9112 §2-§6), with no socket.

A head that could be read two ways is refused, never guessed at: a field line without a colon, white
space in or after a field name, obsolete line folding, a control character in a value, more than one
Content-Length or one that is not plain digits, a Transfer-Encoding other than exactly ``chunked`` or
together with a Content-Length, no Host or several on HTTP/1.1; a body chunk larger than any body
accepted is a 413 as soon as its size is read. Each refusal is typed by its status and
names the rule that refused it (``BadRequest.rule == "duplicate-content-length"``), so that the corpus
in ``tests/http/requests/`` pins which rule fired. ``parse_head`` reads a head from any binary file with
``readline`` and ``peek`` (an ``io.BufferedReader``): the server's deadline-bound socket reader, or one over
``io.BytesIO`` in the corpus's tests, so the corpus drives the very code that serves.
"""

import dataclasses
import io
import re
from typing import Any

from ..core.records import MAX_REQUEST_LINE

MAX_HEADER_FIELDS = 100  # gunicorn's limit_request_fields

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_REQUEST_LINE = re.compile(r"(" + _TOKEN + r") ([^\x00-\x20\x7f]+) (HTTP/1\.[01])\r?\n?")
# field-line = field-name ":" OWS field-value OWS, the value without control characters but HTAB: visible
# characters (obs-text, \x80-\xff, included) with runs of spaces and tabs between them. Written so that no
# character can be read two ways (no backtracking), which its possessive quantifiers (``++``, ``*+``) tell the
# engine: it keeps no state to back up to (findall ~23% faster on a PUT's three fields); and anchored at a
# line's start: ``findall`` over a whole block finds one field a line exactly when every line is one (a line
# that is not is found by no match).
_VISIBLE = r"[!-~\x80-\xff]++"
_FIELD_LINE = re.compile(r"^(" + _TOKEN + r"+):[ \t]*+((?:" + _VISIBLE + r"(?:[ \t]++" + _VISIBLE + r")*+)?+)"
                         r"[ \t]*+\r?\n", re.MULTILINE)
# The names of the fields clients, routers and browsers send, as they spell them (head.py's framing and
# wsgi.py's environ keys look these up as they are, and lower-case or upper-case any other spelling).
COMMON_FIELD_NAMES = tuple(spelled for name in (
    "Host", "User-Agent", "Accept", "Accept-Encoding", "Accept-Language", "Authorization", "Cache-Control",
    "Connection", "Content-Length", "Content-Type", "Cookie", "Expect", "If-None-Match", "Origin", "Referer",
    "Transfer-Encoding", "X-Forwarded-For", "X-Forwarded-Port", "X-Forwarded-Proto", "X-Request-ID",
    "X-Request-Start", "Via") for spelled in (name, name.lower()))
# The fields that frame a request, by kind; the kind of a common spelling is one lookup (0: not framing), of
# any other its lower-cased name's. A fixed table: no spelling a client sends is added to it.
_HOST, _LENGTH, _CODING = 1, 2, 3
_FRAMING_KINDS = {"host": _HOST, "content-length": _LENGTH, "transfer-encoding": _CODING}
_KIND_OF_SPELLING = {name: _FRAMING_KINDS.get(name.lower(), 0) for name in COMMON_FIELD_NAMES}


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


# Not frozen: a frozen dataclass's __init__ costs three times as much, and three are made a request.
@dataclasses.dataclass(slots=True)
class RequestLine:
    method: str
    target: str
    version: str


@dataclasses.dataclass(slots=True)
class Framing:
    """Where the body ends (a Content-Length, chunked, or no body) and the Host it is for."""

    content_length: int | None
    chunked: bool
    host: str | None


@dataclasses.dataclass(slots=True)
class Head:
    request_line: RequestLine
    fields: list[tuple[str, str]]
    framing: Framing


def read_request_line(rfile: "io.BufferedReader[Any]") -> str:
    """The request line as read (its line end included), decoded as Latin-1; 414 from MAX_REQUEST_LINE."""
    try:
        line = rfile.readline(MAX_REQUEST_LINE)
    except TimeoutError:
        raise RequestTimeout("request line not received in time", "request-line-timeout") from None
    if len(line) >= MAX_REQUEST_LINE:
        raise URITooLong("request line too long", "request-line-too-long")
    return line.decode("latin-1")


def read_fields(rfile: "io.BufferedReader[Any]", budget: int) -> list[tuple[str, str]]:
    """The header block's ``[(name, value), ...]``, read within ``budget`` bytes up to its blank line.

    The lines are read first and checked together, in one pass of ``_FIELD_LINE``; a refusal names the first
    line that is not a field (``_check_lines``) before a size or a missing blank line found after it. A block
    that has arrived whole, CRLF lines within the budget and the field limit (what nearly every head is), is
    taken from ``rfile``'s buffer in one read: the same fields and refusals, without a readline a line."""
    try:
        ahead = rfile.peek(1)
    except TimeoutError:
        raise RequestTimeout("request headers not received in time", "header-timeout") from None
    end = ahead.find(b"\n\r\n") + 3  # past the first CRLF blank line that follows a line
    if 3 <= end <= budget and ahead[:1] not in (b"\r", b"\n") and b"\n\n" not in ahead[:end]:
        count = ahead.count(b"\n", 0, end) - 1  # the field lines, the blank one not counted
        if count <= MAX_HEADER_FIELDS:
            block = rfile.read(end)
            fields: list[tuple[str, str]] = _FIELD_LINE.findall(block.decode("latin-1"))
            if len(fields) != count:
                _check_lines(io.BytesIO(block).readlines()[:-1])
            return fields
    lines: list[bytes] = []
    while True:
        try:
            line = rfile.readline(max(budget, 0) + 1)
        except TimeoutError:
            raise RequestTimeout("request headers not received in time", "header-timeout") from None
        budget -= len(line)
        if budget < 0:
            _check_lines(lines)
            raise HeaderFieldsTooLarge("request header block is too large", "header-block-too-large")
        if not line.endswith(b"\n"):
            _check_lines(lines)
            raise BadRequest("request headers end before the blank line", "unterminated-header-block")
        if line in (b"\r\n", b"\n"):
            break
        lines.append(line)
        if len(lines) > MAX_HEADER_FIELDS:
            _check_lines(lines)
            raise HeaderFieldsTooLarge(f"more than {MAX_HEADER_FIELDS} header fields", "too-many-header-fields")
    fields = _FIELD_LINE.findall(b"".join(lines).decode("latin-1"))
    if len(fields) != len(lines):
        _check_lines(lines)
    return fields


def _check_lines(lines: list[bytes]) -> None:
    """Refuse the first of ``lines`` that is not a field line, by the rule it breaks."""
    for line in lines:
        if not _FIELD_LINE.fullmatch(line.decode("latin-1")):
            raise BadRequest(*_field_line_problem(line))


def _field_line_problem(line: bytes) -> tuple[str, str]:
    if line[:1] in (b" ", b"\t"):
        return "obsolete line folding in the request headers", "obsolete-line-folding"
    if b":" not in line:
        return "a request header line without a colon", "field-line-without-colon"
    if not re.fullmatch(_TOKEN, line.split(b":", 1)[0].decode("latin-1")):
        return "a request header name with white space or a separator", "invalid-field-name"
    return "a control character in a request header value", "control-character-in-value"


def check_framing(fields: list[tuple[str, str]], version: str) -> Framing:
    """One way only to tell where the body ends and whose host the request is for (RFC 9112 §6.3)."""
    host = length = coding = None
    hosts = lengths = codings = 0  # how many of each: a second one is refused, so the last is the only one
    for name, value in fields:
        kind = _KIND_OF_SPELLING.get(name)
        if kind is None:
            kind = _FRAMING_KINDS.get(name.lower())
        if kind:
            if kind == _HOST:
                host = value
                hosts += 1
            elif kind == _LENGTH:
                length = value
                lengths += 1
            else:
                coding = value
                codings += 1
    if length is not None:
        if lengths > 1:
            raise BadRequest("more than one Content-Length", "duplicate-content-length")
        # ASCII digits only: isdigit() alone takes superscripts (Latin-1's ²) and other scripts' digits.
        if not (length.isascii() and length.isdigit()):
            raise BadRequest("Content-Length must be digits", "invalid-content-length")
    if coding is not None:
        if codings > 1 or coding.lower() != "chunked":
            raise BadRequest("Transfer-Encoding must be exactly chunked", "invalid-transfer-encoding")
        if length is not None:
            raise BadRequest("Content-Length and Transfer-Encoding together", "content-length-with-transfer-encoding")
        if version != "HTTP/1.1":
            raise BadRequest("Transfer-Encoding needs HTTP/1.1", "transfer-encoding-before-http-1.1")
    if hosts != 1:
        if hosts:
            raise BadRequest("an HTTP/1.1 request needs exactly one Host header", "duplicate-host")
        if version == "HTTP/1.1":
            raise BadRequest("an HTTP/1.1 request needs exactly one Host header", "missing-host")
    content_length = None
    if length is not None:
        try:
            content_length = int(length)
        except ValueError:  # more digits than int() reads (sys.get_int_max_str_digits), leading zeros counted
            content_length = _long_content_length(length)
    return Framing(content_length, coding is not None, host)


def _long_content_length(digits: str) -> int:
    """A Content-Length of more digits than int() reads: its value if they are mostly zero padding; else
    a 400, as nginx answers a length it cannot hold (it is past any body accepted anyway)."""
    try:
        return int(digits.lstrip("0") or "0")
    except ValueError:
        raise BadRequest("Content-Length is too large", "invalid-content-length") from None


def check_chunk_size(size: int, limit: int) -> None:
    """A chunk larger than any body accepted is refused when its size line is read, not after its bytes."""
    if size > limit:
        raise ContentTooLarge(f"request body is larger than {limit} bytes", "chunk-too-large", limit)


def parse_head(rfile: "io.BufferedReader[Any]", max_header_bytes: int) -> Head:
    """The head read from ``rfile`` up to its blank line (what follows is the body, left unread); a
    Refusal if it is not one the server takes."""
    line = read_request_line(rfile)
    # ``METHOD SP target SP HTTP/1.x``, one space each: nothing else (HTTP/0.9, a TLS hello) is read.
    match = _REQUEST_LINE.fullmatch(line)
    if match is None:
        raise BadRequest("malformed request line", "malformed-request-line")
    request_line = RequestLine(*match.groups())
    # What is left of GROWTH_MAX_HEADER_BYTES for the fields once the request line is counted.
    fields = read_fields(rfile, max_header_bytes - len(line.rstrip()))
    return Head(request_line, fields, check_framing(fields, request_line.version))
