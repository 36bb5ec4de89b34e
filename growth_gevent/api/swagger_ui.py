"""Interactive API docs: Swagger UI at ``/docs`` over ``/openapi.json``.

Its assets come from the swagger-ui-bundle package (Swagger UI's own dist files, Apache-2.0) and are
served from here, so that the page works offline and behind firewalls that block CDNs: the page names
no other host. The page's script is a file of its own, not inline, so that a strict Content Security
Policy (``script-src 'self'``) allows it.
"""

import pathlib

import swagger_ui_bundle

from . import static

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


class Page(static.Page):
    """``GET /docs``: the Swagger UI page."""

    def __init__(self) -> None:
        super().__init__(PAGE)


class Assets(static.Files):
    """``GET /docs/{asset}``: the page's script and the bundle's files, read on first use and kept
    (1.2 MB, of which 1 MB is the script), so that a server nobody reads the docs of holds none of them."""

    def __init__(self, bundle: pathlib.Path = swagger_ui_bundle.swagger_ui_path):
        super().__init__(bundle, BUNDLE_ASSETS, ASSET_CACHE_CONTROL,
                         {"init.js": static.StaticFile(INITIALIZER, "text/javascript; charset=utf-8")})
