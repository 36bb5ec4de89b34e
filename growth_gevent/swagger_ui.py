"""Interactive API docs: Swagger UI at ``/docs`` over ``/openapi.json``.

Its assets come from the swagger-ui-bundle package (Swagger UI's own dist files, Apache-2.0) and are
served from here, so that the page works offline and behind firewalls that block CDNs: the page names
no other host. The page's script is a file of its own, not inline, so that a strict Content Security
Policy (``script-src 'self'``) allows it.
"""

import hashlib
import pathlib

import falcon
import swagger_ui_bundle

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
# Asset URLs do not change with the bundle's version: a day of caching, then revalidated by ETag.
ASSET_CACHE_CONTROL = "public, max-age=86400"


class _File:
    __slots__ = ("data", "etag", "media_type")

    def __init__(self, data: bytes, media_type: str):
        self.data = data
        self.media_type = media_type
        self.etag = hashlib.sha256(data).hexdigest()[:20]

    def send(self, req: falcon.Request, resp: falcon.Response, cache_control: str) -> None:
        resp.cache_control = (cache_control,)
        resp.etag = self.etag
        if req.if_none_match and any(tag in ("*", self.etag) for tag in req.if_none_match):
            resp.status = falcon.HTTP_304
            return
        resp.content_type = self.media_type
        resp.set_header("X-Content-Type-Options", "nosniff")
        resp.data = self.data


class Page:
    """``GET /docs``: the Swagger UI page, revalidated at every visit (it is small)."""

    def __init__(self):
        self._page = _File(PAGE, "text/html; charset=utf-8")

    def on_get(self, req, resp):
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
