"""``GET /explore``: a page to look at the data, a chart and a table of one to five series, and its files.

The page is a client of the public API and nothing else: it reads the facets, the series, the store's size
and the bulk status, and links to the export for downloads. It works wherever the API does (both stores,
tokens set or not: reads are public) and changes nothing. Its files (``explore_files/``, hand-written, no
library: the chart is SVG) are served from here under the same Content Security Policy as ``/docs``, so that
it works offline and runs no inline script. The page and its files are revalidated at every visit by ETag
(they are small, and a new release must not meet a day-old script)."""

import pathlib

from . import static

PAGE_PATH = "/explore"
FILES = pathlib.Path(__file__).parent / "explore_files"
MEDIA_TYPES = {
    "explore.js": "text/javascript; charset=utf-8",
    "explore.css": "text/css; charset=utf-8",
}


class Page(static.Page):
    """``GET /explore``: the page; its query string is the page's own state, read by its script."""

    def __init__(self) -> None:
        super().__init__((FILES / "explore.html").read_bytes())


class Assets(static.Files):
    """``GET /explore/{asset}``: the page's script and stylesheet."""

    def __init__(self) -> None:
        super().__init__(FILES, MEDIA_TYPES, "no-cache")
