"""Interactive API docs: Swagger UI at ``/docs`` over ``/openapi.json``.

Its assets come from the swagger-ui-bundle package (Swagger UI's own dist files, Apache-2.0) and are
served from here, so that the page works offline and behind firewalls that block CDNs: the page names
no other host. The page's script is a file of its own, not inline, so that a strict Content Security
Policy (``script-src 'self'``) allows it.
"""

import gzip
import pathlib

import falcon
import swagger_ui_bundle

from .compression import accepts_gzip
from .conditional import etag_of, send_tagged

PAGE_PATH = "/docs"
# Swagger UI validates a document by sending it to validator.swagger.io unless told not to.
INITIALIZER = b"""window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
};
"""
PAGE = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>growth-gevent API</title>
<link rel="stylesheet" href="{PAGE_PATH}/swagger-ui.css">
<link rel="icon" type="image/png" href="{PAGE_PATH}/favicon-32x32.png" sizes="32x32">
<link rel="icon" type="image/png" href="{PAGE_PATH}/favicon-16x16.png" sizes="16x16">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{PAGE_PATH}/swagger-ui-bundle.js"></script>
<script src="{PAGE_PATH}/init.js"></script>
</body>
</html>
""".encode()
# The files of the bundle that the page uses, by name, with their media types.
BUNDLE_ASSETS = {
    "swagger-ui.css": "text/css; charset=utf-8",
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "favicon-32x32.png": "image/png",
    "favicon-16x16.png": "image/png",
}
# Smaller files are sent as they are: the page and its script, the icons (PNG is compressed already).
GZIP_AT_LEAST_BYTES = 4096
# The page loads its own files only (its script is a file, not inline), and no page may frame it
# (clickjacking). Swagger UI's stylesheet draws its icons as data: images; React sets styles through the
# DOM, which style-src does not govern.
PAGE_POLICY = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
# Asset URLs do not change with the bundle's version: a day of caching, then revalidated by ETag.
ASSET_CACHE_CONTROL = "public, max-age=86400"


class _File:
    """One file, and its gzip form when that is worth sending: the script is 1 MB, 0.3 MB gzipped."""

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
    """``GET /docs``: the Swagger UI page, revalidated at every visit (it is small)."""

    def __init__(self):
        self._page = _File(PAGE, "text/html; charset=utf-8")

    def on_get(self, req, resp):
        resp.set_header("Content-Security-Policy", PAGE_POLICY)
        self._page.send(req, resp, "no-cache")

    on_head = on_get


class Assets:
    """``GET /docs/{asset}``: the page's script and the bundle's files, read on first use and kept
    (1.2 MB, of which 1 MB is the script), so that a server nobody reads the docs of holds none of them."""

    def __init__(self, bundle: pathlib.Path = swagger_ui_bundle.swagger_ui_path):
        self._bundle = pathlib.Path(bundle)
        self._files = {"init.js": _File(INITIALIZER, "text/javascript; charset=utf-8")}

    def on_get(self, req, resp, asset):
        file = self._files.get(asset)
        if file is None:
            if asset not in BUNDLE_ASSETS:
                raise falcon.HTTPNotFound()
            file = self._files[asset] = _File((self._bundle / asset).read_bytes(), BUNDLE_ASSETS[asset])
        file.send(req, resp, ASSET_CACHE_CONTROL)

    on_head = on_get
