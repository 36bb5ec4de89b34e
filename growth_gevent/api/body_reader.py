"""A request body read into memory: its media type checked, its size held to the limit, its bytes charged to
the body budget as they are read from ``wsgi.input`` (the framed body that http/bodies.py hands over)."""

import falcon

from ..http.head import ContentTooLarge
from .strict_json import parse_json

_READ_BLOCK = 64 * 1024
# A body's first read: a PUT's whole body, and all that a body that has sent nothing yet is charged.
_FIRST_READ_BYTES = 4 * 1024


def read_json(req, max_bytes, reservation):
    """The parsed JSON body of ``req``, or a typed falcon error (415, 413, 503, 400)."""
    request_media_type(req, (falcon.MEDIA_JSON,))
    return parse_json(read_body(req, max_bytes, reservation), unique_keys=True)


def read_body(req, max_bytes, reservation):
    """The raw bytes of a request body, charged to ``reservation`` as they are read; or a typed falcon error
    (413, 503, 408, 400). Its media type is the caller's to check first (``request_media_type``)."""
    return _read_bounded(req.stream, req.content_length, max_bytes, reservation)


def request_media_type(req, accepted):
    """The media type of ``req``'s body, lower-case and without parameters; a 415 unless in ``accepted``."""
    media_type = (req.content_type or "").split(";", 1)[0].strip().lower()
    if media_type not in accepted:
        raise falcon.HTTPUnsupportedMediaType(description=f"Content-Type must be {' or '.join(accepted)}")
    return media_type


def _read_bounded(stream, content_length, max_bytes, reservation):
    # The Content-Length is a framing decision (413 at once), not a reservation: the body is charged
    # as it arrives, each read reserving what it may bring before it is made. A read asks for at most
    # what has arrived so far (from _FIRST_READ_BYTES, doubling to _READ_BLOCK), so a body that
    # trickles holds about what it sent, never what it declared. Chunked, the server de-chunks it and
    # it is read one byte past the limit, to tell a body over it.
    if content_length is not None and content_length > max_bytes:
        raise _too_large(max_bytes)
    expected = max_bytes + 1 if content_length is None else content_length
    body = bytearray()
    while len(body) < expected:
        size = min(_READ_BLOCK, max(_FIRST_READ_BYTES, len(body)), expected - len(body))
        reservation.grow(size)
        part = _read(stream, size)
        reservation.grow(len(part) - size)
        if not part:
            break
        body += part
    if len(body) > max_bytes:
        raise _too_large(max_bytes)
    return body


def _read(stream, size):
    try:
        return stream.read(size)
    except TimeoutError:  # the server's body deadline (GROWTH_BODY_TIMEOUT), or it is shutting down
        raise falcon.HTTPError(falcon.HTTP_408, description="request body not received in time",
                               headers={"Connection": "close"}) from None
    except ContentTooLarge as error:  # a chunk declared larger than the server takes any body
        raise _too_large(error.limit) from None
    except (OSError, ValueError):
        raise falcon.HTTPBadRequest(description="request body could not be read") from None


def _too_large(max_bytes):
    # Connection: close tells the server not to read the rest of the oversize body.
    return falcon.HTTPContentTooLarge(
        description=f"request body is larger than {max_bytes} bytes",
        headers={"Connection": "close"},
    )
