"""What an answer is sent as: the media type chosen (``format=``, else Accept), the body written (JSON, CSV) and
its ETag, with the 304 of an If-None-Match that names it (RFC 9110 §8.8.3, §13): a hash of the representation,
so that every worker gives one representation one tag and a change of the data changes it, whatever the store.
The streamed export writes its own body, a batch at a time (``export``), with :func:`dumps` here."""

import hashlib
from collections.abc import Sequence
from hashlib import blake2b

import falcon
import ujson

from ..core.records import Key, Number, Record, as_record
from . import csv_format
from .conditional import names

JSON = falcon.MEDIA_JSON
CSV = csv_format.MEDIA_TYPE
NDJSON = "application/x-ndjson"
# ``format=`` by name; a route offers some of them, its default first (client_prefers() picks the first of equals).
FORMATS = {"json": JSON, "csv": CSV, "ndjson": NDJSON}
# What nearly every client sends (curl, requests, pandas, none at all): JSON, the default, with no parse of Accept.
_ACCEPT_ANYTHING = frozenset({"*/*", JSON})
# Hex digits of an ETag: 80 bits, far past any chance collision among one resource's versions.
ETAG_DIGITS = 20
# Records whose JSON and ETag a worker keeps (~500 bytes each with its key: 2 MiB at most): the hot ones of a mix.
RECORD_BODIES_KEPT = 4096
_RECORD_HASHER = blake2b(digest_size=ETAG_DIGITS // 2)


def negotiate(req: falcon.Request, params: dict[str, str], offered: tuple[str, ...]) -> str:
    """The media type to answer among ``offered``: ``format=`` (400 when the route does not offer it), else
    the one Accept prefers (q-values weighed, as RFC 9110 says), else the first."""
    chosen = params.get("format")
    if chosen is not None:
        media_type = FORMATS.get(chosen)
        if media_type not in offered:
            known = sorted(name for name, each in FORMATS.items() if each in offered)
            raise falcon.HTTPBadRequest(description=f"format must be {', '.join(known[:-1])} or {known[-1]}")
        return media_type
    accept = req.accept
    if accept in _ACCEPT_ANYTHING:  # parsing Accept costs more than a hot GET can spare
        return offered[0]
    return req.client_prefers(offered) or offered[0]


def dumps(document: object) -> str:
    return ujson.dumps(document, escape_forward_slashes=False)


def send_json(resp: falcon.Response, document: object, status: str = falcon.HTTP_200) -> None:
    resp.status = status
    resp.data = dumps(document).encode()


class RecordBodies:
    """Each record's JSON and ETag made once per value, not once per read: kept for the records last written or
    read (at most ``limit``, all dropped when full), with the value object they were made of. A value that is not
    that very object (written since, by this worker or another) makes them again; identity, not equality, since
    ``1`` and ``1.0``, ``0.0`` and ``-0.0`` are equal and written differently."""

    __slots__ = ("_kept", "_limit")

    def __init__(self, limit: int = RECORD_BODIES_KEPT) -> None:
        self._kept: dict[Key, tuple[Number, bytes, str]] = {}
        self._limit = limit

    def of(self, key: Key, value: Number) -> tuple[bytes, str]:
        """The record's JSON, as :func:`dumps` writes it, and its ETag (unquoted): the BLAKE2b of that JSON, of 80
        bits. Not :func:`etag_of`'s SHA-256, which through OpenSSL costs twice the instructions on a body of ~70
        bytes, and more time, though the CPU's SHA extensions make it the faster on a page (docs/app.md)."""
        kept = self._kept.get(key)
        if kept is not None and kept[0] is value:
            return kept[1], kept[2]
        return self.made(key, value)

    def tag(self, key: Key, value: Number) -> str:
        """The ETag (unquoted) of the record ``key`` holding ``value``."""
        return self.of(key, value)[1]

    def made(self, key: Key, value: Number) -> tuple[bytes, str]:
        """:meth:`of` a value just written, which none kept can be: made and kept without a lookup."""
        # Its names hold no '/' (check_name), so ujson's default escaping gives dumps()'s bytes, without the keyword
        # that costs ~0.7 µs a call (docs/performance.md#a-records-json-without-ujsons-keyword).
        body = ujson.dumps(as_record(key, value)).encode()
        hasher = _RECORD_HASHER.copy()  # a copy costs less than a new one's keyword
        hasher.update(body)
        etag = hasher.hexdigest()
        if len(self._kept) >= self._limit:
            self._kept.clear()
        self._kept[key] = (value, body, etag)
        return body, etag


def send_csv(resp: falcon.Response, records: Sequence[Record]) -> None:
    resp.content_type = csv_format.CONTENT_TYPE
    resp.data = csv_format.write(records)


def etag_of(body: bytes, headers: bytes = b"") -> str:
    """The strong ETag (unquoted) of a representation: its body, and what it sends in ``headers`` that a
    change should show (a CSV page's total and next link). A gzipped form is another representation: the
    gzip middleware sends it with this tag's weak form."""
    digest = hashlib.sha256(body)
    if headers:
        digest.update(headers)
    return digest.hexdigest()[:ETAG_DIGITS]


def send_tagged(req: falcon.Request, resp: falcon.Response, etag: str, weak: bool = False) -> bool:
    """Send ``resp`` with ``etag`` (its weak form ``W/"..."`` for a gzipped answer, the gzip middleware's
    rule); a 304 without its body when If-None-Match names it or is ``*`` (compared weakly, as RFC 9110
    §13.1.2 says for GET and HEAD): then True."""
    # Not falcon's properties, on the hot GET: the header set as it is, and parsed only when sent.
    resp.set_header("ETag", f'W/"{etag}"' if weak else f'"{etag}"')
    if "HTTP_IF_NONE_MATCH" not in req.env or not names(req.if_none_match, etag, weakly=True):
        return False
    resp.status = falcon.HTTP_304
    # What the 200 would have sent, for the gzip middleware to give the 304 the 200's ETag and Vary.
    resp.context.withheld_bytes = len(resp.data or b"")
    resp.data = None
    resp.content_type = None  # no content, so no type of it (a CSV answer set one)
    return True


def tag_body(req: falcon.Request, resp: falcon.Response, headers: bytes = b"") -> None:
    """:func:`send_tagged` with the ETag of the body ``resp.data`` (and ``headers``, as :func:`etag_of`)."""
    send_tagged(req, resp, etag_of(resp.data or b"", headers))
