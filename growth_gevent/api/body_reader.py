"""A request body read into memory: its media type and content coding checked, a gzipped one inflated as it
arrives, its size held to the limit, its bytes charged to the body budget once received. It reads
``wsgi.input``, the framed body that http/bodies.py hands over, and turns that layer's refusals into
``{"msg"}`` answers."""

import zlib
from collections.abc import Iterator

import falcon
from falcon.typing import ReadableIO

from ..core.records import UPDATE_BODY_ROOM, Key, Number, max_update_body_bytes, parse_value_update
from ..http.bodies import SizedBody
from ..http.head import ContentTooLarge
from .body_budget import BodyBudget, Charge
from .strict_json import parse_json, value_only

# The most a read asks for, and the most one inflating step makes of it.
READ_BLOCK = 64 * 1024
# zlib's window bits for the gzip format (RFC 1952), header and trailer checked.
_GZIP = 16 + zlib.MAX_WBITS
# Content-Encoding values read as gzip: RFC 9110 §8.4.1.3 asks recipients to take x-gzip as gzip.
_GZIP_NAMES = ("gzip", "x-gzip")
_QUOTED_CHARS = 40
_JSON = (falcon.MEDIA_JSON,)


def read_value_update(req: falcon.Request, max_bytes: int, bodies: BodyBudget, key: Key) -> Number:
    """The number a PUT body of at most ``max_bytes`` (and ``max_update_body_bytes``) gives the record ``key``
    (``parse_value_update``), or a typed falcon error (415, 413, 503, 400) or InvalidRecord: ``{"value": n}``,
    what nearly every PUT sends, read and checked in one match (``value_only``), any other body parsed whole as
    strict JSON. The body is charged to ``bodies`` as it arrives and until parsed, unless it came whole with its
    head and the budget holds nothing."""
    request_media_type(req, _JSON)
    stream = req.stream
    # A body sent as it is that came whole with its head (http/bodies.py's SizedBody.read_arrived), read at once
    # while ``bodies`` holds nothing, is not charged: the budget's checks could not refuse it (one client's first
    # ``client_limit`` bytes always fit an empty budget), and its charge would be given back before this greenlet
    # next yields, seen by no other request (docs/bounds.md#held-bodies). Within UPDATE_BODY_ROOM a body is within
    # any record's bound: that bound is worked out only past it.
    if type(stream) is SizedBody and not bodies.held and "HTTP_CONTENT_ENCODING" not in req.env:
        body = stream.read_arrived(min(max_bytes, UPDATE_BODY_ROOM, bodies.client_limit))
        if body is not None:
            return _value_update(body, key)
    with bodies.reserve(req.remote_addr) as charge:
        return _value_update(read_body(req, min(max_bytes, max_update_body_bytes(key)), charge), key)


def _value_update(body: bytes | bytearray, key: Key) -> Number:
    value = value_only(body)
    return parse_value_update(parse_json(body, unique_keys=True), key) if value is None else value


def read_body(req: falcon.Request, max_bytes: int, charge: Charge) -> bytearray:
    """The bytes of a request body, inflated if gzipped, charged to ``charge`` (a BodyBudget's) as they
    are received; or a typed falcon error (415, 413, 503, 408, 400). Its media type is the caller's to
    check first (``request_media_type``)."""
    gunzip = _content_coding(req)
    return _read_bounded(req.stream, req.content_length, max_bytes, charge, gunzip)


def request_media_type(req: falcon.Request, accepted: tuple[str, ...]) -> str:
    """The media type of ``req``'s body, lower-case and without parameters; a 415 unless in ``accepted``."""
    media_type = req.content_type
    if media_type not in accepted:  # sent as it is named (nearly every request): nothing to strip or lower
        media_type = (media_type or "").split(";", 1)[0].strip().lower()
        if media_type not in accepted:
                raise falcon.HTTPUnsupportedMediaType(description=f"Content-Type must be {' or '.join(accepted)}")
    return media_type


def _content_coding(req: falcon.Request) -> "_Gunzip | None":
    """None for a body sent as it is, a _Gunzip for a gzipped one; a 415 for any other coding, which says
    what is decoded in Accept-Encoding (RFC 9110 §15.5.16)."""
    coding = req.env.get("HTTP_CONTENT_ENCODING")
    if coding is None:
        return None
    coding = coding.strip().lower()
    if coding in _GZIP_NAMES:
        return _Gunzip()
    if coding in ("", "identity"):
        return None
    raise falcon.HTTPUnsupportedMediaType(
        description=f"Content-Encoding {coding[:_QUOTED_CHARS]!r} is not decoded here: send gzip, or no "
                    f"Content-Encoding", headers={"Accept-Encoding": "gzip"})


class _Gunzip:
    """A gzip body inflated as its bytes arrive, one member after another (RFC 1952 §2.2), never more than
    the room left for it at a time: a bomb stops at the limit."""

    def __init__(self) -> None:
        self._inflater = zlib.decompressobj(_GZIP)

    def pieces(self, data: bytes, room: int) -> Iterator[bytes]:
        """What ``data`` inflates to, in pieces of at most READ_BLOCK bytes, stopping once more than
        ``room`` bytes came out; a 400 when it is not gzip."""
        while room >= 0:
            inflater = self._inflater
            most = min(READ_BLOCK, room + 1)
            try:
                piece = inflater.decompress(data, most)
            except zlib.error as error:
                raise falcon.HTTPBadRequest(description=f"request body is not valid gzip: {error}") from None
            yield piece
            room -= len(piece)
            if inflater.eof:  # a member ended: what follows it (now or in a later read) is the next one
                data = inflater.unused_data
                if not data:
                    return
                self._inflater = zlib.decompressobj(_GZIP)
            else:
                data = inflater.unconsumed_tail
                if not data and len(piece) < most:  # all of data inflated: nothing more to come of it
                    return

    def check_ended(self) -> None:
        """A 400 unless the gzip stream ended with its body."""
        if not self._inflater.eof:
            raise falcon.HTTPBadRequest(description="request body ends inside its gzip stream")


def _read_bounded(stream: ReadableIO, content_length: int | None, max_bytes: int, charge: Charge,
                  gunzip: _Gunzip | None) -> bytearray:
    # The Content-Length is a framing decision (413 at once), not a charge: a read asks for at most
    # READ_BLOCK and hands over what has arrived (http/bodies.py), and what it brought is charged, so a
    # body that trickles holds what it sent, never what it declared. Chunked, the server de-chunks it
    # and it is read one byte past the limit, to tell a body over it. Gzipped, what is held and charged
    # is what it inflates to, held to the limit as it is made; each read is dropped once inflated.
    if content_length is not None and content_length > max_bytes:
        raise _too_large(max_bytes)
    expected = max_bytes + 1 if content_length is None else content_length
    charge.check_room()  # a full budget reads nothing; after this, what a read brings is charged
    body = bytearray()
    received = 0
    while received < expected:
        part = _read(stream, min(READ_BLOCK, expected - received))
        if not part:
            break
        received += len(part)
        if gunzip is None:
            charge.add(len(part))
            body += part
        else:
            for piece in gunzip.pieces(part, max_bytes - len(body)):
                charge.add(len(piece))
                body += piece
        if len(body) > max_bytes or received > max_bytes:
            raise _too_large(max_bytes, " once inflated" if len(body) > max_bytes and gunzip else "")
    if gunzip is not None:
        gunzip.check_ended()
    return body


def _read(stream: ReadableIO, size: int) -> bytes:
    try:
        return stream.read(size)
    except TimeoutError:  # the server's body deadline (GROWTH_BODY_TIMEOUT), or it is shutting down
        raise falcon.HTTPError(falcon.HTTP_408, description="request body not received in time",
                               headers={"Connection": "close"}) from None
    except ContentTooLarge as error:  # a chunk declared larger than the server takes any body
        raise _too_large(error.limit) from None
    except (OSError, ValueError):
        raise falcon.HTTPBadRequest(description="request body could not be read") from None


def _too_large(max_bytes: int, inflated: str = "") -> falcon.HTTPContentTooLarge:
    # Connection: close tells the server not to read the rest of the oversize body.
    return falcon.HTTPContentTooLarge(
        description=f"request body is larger than {max_bytes} bytes{inflated}",
        headers={"Connection": "close"},
    )
