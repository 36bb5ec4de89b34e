"""gzip for the clients that take it: a middleware that compresses every body of GZIP_AT_LEAST_BYTES or
more (pages, series, facets, ``/openapi.json``) and every streamed one (the export, chunk by chunk), when
the request's Accept-Encoding takes gzip; such answers say ``Vary: Accept-Encoding`` either way, so that a
cache keeps the two apart. Smaller bodies are sent as they are: gzip's header and trailer would eat what
it saves. An answer encoded already (the /docs assets, gzipped once) is left alone.
"""

import gzip
import zlib
from collections.abc import Iterable, Iterator
from typing import cast

import falcon

# The level chosen from what it costs per page against what it saves (docs/performance.md#gzip-level): 1 takes the
# most of the saving for the least CPU on these bodies.
GZIP_LEVEL = 1
# Below this, gzip's 18 bytes of framing and its CPU are not worth what it saves (nginx's gzip_min_length
# is 20 bytes, Cloudflare's and Akamai's ~1 kB).
GZIP_AT_LEAST_BYTES = 1024
_GZIP_WINDOW_BITS = 16 + zlib.MAX_WBITS  # zlib's way of asking for the gzip header and trailer


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding header takes gzip: named, or else ``*``, with a q-value above 0."""
    qualities = {}
    for coding in accept_encoding.lower().split(","):
        name, _, parameters = coding.partition(";")
        try:
            qualities[name.strip()] = float(parameters.partition("q=")[2].strip() or 1)
        except ValueError:  # a malformed q-value: not an acceptance
            qualities[name.strip()] = 0.0
    return qualities.get("gzip", qualities.get("*", 0.0)) > 0


class Gzip:
    """The falcon middleware. A gzipped answer carries the weak form of its ETag, as nginx's gzip does: a
    representation of its own (RFC 9110 §8.8.3), which If-None-Match (compared weakly) still revalidates
    and If-Match (compared strongly) never takes for the identity one. A 304 carries the tag and Vary the
    200 would have."""

    def process_response(self, req: falcon.Request, resp: falcon.Response,
                         resource: object, req_succeeded: bool) -> None:
        stream, data = resp.stream, resp.data
        if stream is None:  # the small body first: most answers are one
            size = len(data) if data is not None else getattr(resp.context, "withheld_bytes", 0)
            if size < GZIP_AT_LEAST_BYTES:
                return
        if "Accept-Encoding" in (resp.get_header("Vary") or ""):  # a resource that encodes its own answers
            return
        if resp.get_header("Content-Encoding") is not None:  # it says its own Vary
            return
        resp.append_header("Vary", "Accept-Encoding")
        if not accepts_gzip(req.get_header("Accept-Encoding") or ""):
            return
        etag = resp.get_header("ETag")
        if etag is not None and not etag.startswith("W/"):
            resp.set_header("ETag", f"W/{etag}")
        if stream is not None:
            # An iterable of bytes (the export's): no resource here streams a file-like object.
            resp.stream = _gzipped(cast(Iterable[bytes], stream))
        elif data is None:  # a 304
            return
        else:
            resp.data = gzip.compress(data, GZIP_LEVEL, mtime=0)
        resp.set_header("Content-Encoding", "gzip")


def _gzipped(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """``chunks`` gzipped as they come: one compressor's window of memory, whatever the length."""
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, _GZIP_WINDOW_BITS)
    for chunk in chunks:
        compressed = compressor.compress(chunk)
        if compressed:  # an empty chunk would end a chunked answer
            yield compressed
    yield compressor.flush()
