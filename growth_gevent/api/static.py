"""Files served as they are, for the pages of this server (``/docs``, ``/explore``): each with its ETag, its
gzip form when worth sending, and the caching its route asks for. Read on first use and kept for the
process: every app of a process shares them."""

import functools
import gzip
import pathlib

import falcon

from . import params
from .compression import accepts_gzip
from .representation import etag_of, send_tagged

# Smaller files are sent as they are: a page and its small script, the icons (PNG is compressed already).
GZIP_AT_LEAST_BYTES = 4096
# A page loads its own files only (its script is a file, not inline), and no page may frame it
# (clickjacking). Swagger UI's stylesheet draws its icons as data: images; scripts that set styles through
# the DOM are not governed by style-src.
PAGE_POLICY = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
HTML = "text/html; charset=utf-8"


class StaticFile:
    """One file, and its gzip form when that is worth sending: Swagger UI's script is 1 MB, 0.3 MB gzipped."""

    __slots__ = ("data", "etag", "gzipped", "media_type")

    def __init__(self, data: bytes, media_type: str):
        self.data = data
        self.media_type = media_type
        self.etag = etag_of(data)
        # Compressed once, when the file is first asked for (docs/performance.md#swagger-uis-script-gzipped-once).
        self.gzipped = gzip.compress(data, mtime=0) if len(data) >= GZIP_AT_LEAST_BYTES else None

    def send(self, req: falcon.Request, resp: falcon.Response, cache_control: str) -> None:
        resp.cache_control = (cache_control,)
        gzipped = self.gzipped is not None and accepts_gzip(req.get_header("Accept-Encoding") or "")
        if self.gzipped is not None:
            resp.vary = ("Accept-Encoding",)
        # Each encoding is a representation of its own, with an ETag of its own (RFC 9110, 8.8.3).
        if send_tagged(req, resp, self.etag, weak=gzipped):
            return
        resp.content_type = self.media_type
        if gzipped:
            resp.set_header("Content-Encoding", "gzip")
        resp.data = self.gzipped if gzipped else self.data


class Page:
    """A page of HTML under PAGE_POLICY, revalidated at every visit (it is small)."""

    def __init__(self, html: bytes):
        self._page = StaticFile(html, HTML)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        # No query rule (params.py): a page's query is its script's state, which the server never reads.
        resp.set_header("Content-Security-Policy", PAGE_POLICY)
        self._page.send(req, resp, "no-cache")

    on_head = on_get


class Files:
    """``GET {page}/{asset}``: the files of ``directory`` named in ``media_types`` (name: media type), and
    ``made`` (name: StaticFile) built by the code; any other name is a 404."""

    def __init__(self, directory: pathlib.Path, media_types: dict[str, str], cache_control: str,
                 made: dict[str, StaticFile] | None = None):
        self._directory = pathlib.Path(directory)
        self._media_types = media_types
        self._cache_control = cache_control
        self._files = dict(made or {})

    def on_get(self, req: falcon.Request, resp: falcon.Response, asset: str) -> None:
        params.none(req)
        file = self._files.get(asset)
        if file is None:
            if asset not in self._media_types:
                raise falcon.HTTPNotFound()
            file = self._files[asset] = _read(self._directory / asset, self._media_types[asset])
        file.send(req, resp, self._cache_control)

    on_head = on_get


@functools.cache
def _read(path: pathlib.Path, media_type: str) -> StaticFile:
    return StaticFile(path.read_bytes(), media_type)
