"""``GET /api/v1/growth/export``: every record that the list's filters match, in its order, streamed. An NDJSON
export starts with the descriptions of the codes (``{"Country":"BRA","name":"Brazil"}``), so that ``load`` of it
keeps them. The store reads a batch at a time (``Store.export``) and each is written and sent before the next is
read, so that an export holds one batch of records, whatever the store's size, and a client that reads slowly
holds its connection's send buffer and no more (the greenlet waits in ``sendall``). Between batches the greenlet
yields, so that other requests are answered while exports run.
"""

import re
from collections.abc import Iterator
from urllib.parse import quote

import falcon

from ..core.descriptions import COUNTRY, INDICATOR
from ..core.loop import let_io_run
from ..core.records import Record, as_record
from ..stores.base import Store
from . import csv_format, params
from .representation import CSV, FORMATS, JSON, NDJSON, dumps, negotiate

# What an export can be answered as, the default first.
REPRESENTATIONS = (JSON, CSV, NDJSON)
CSV_FILENAME = "growth.csv"
# The names /export.{format} takes, as a 404 lists them.
FILE_NAMES = sorted(f"export.{name}" for name, media_type in FORMATS.items() if media_type in REPRESENTATIONS)
# What a file name keeps as it is in the header's plain filename="..."; the rest is "_" there, and the whole
# name is in filename*= (RFC 6266, RFC 8187) for browsers, which prefer it.
_PLAIN = re.compile(r"[^A-Za-z0-9._-]")


class Export:
    """``/api/v1/growth/export``, in the format ``format=`` or Accept chooses; ``/api/v1/growth/export.{format}``
    (suffix ``file``), in the format its name says: a URL that names its file, and an operation of its own for a
    generated client, which reads each format as text (docs/api.md)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        given = params.query(req, params.EXPORT)
        media_type = negotiate(req, given, REPRESENTATIONS)
        resp.vary = ("Accept",)
        self._send(resp, given, media_type)

    on_head = on_get

    def on_get_file(self, req: falcon.Request, resp: falcon.Response, format: str) -> None:
        media_type = FORMATS.get(format)
        if media_type not in REPRESENTATIONS:
            raise falcon.HTTPNotFound(description=f"no export as {format[:20]!r}: "
                                                  f"{', '.join(FILE_NAMES[:-1])} or {FILE_NAMES[-1]}")
        self._send(resp, params.query(req, params.FILTERS), media_type)

    on_head_file = on_get_file

    def _send(self, resp: falcon.Response, given: dict[str, str], media_type: str) -> None:
        country, indicator, first, last = params.filters(given)
        batches = self._store.export(country, indicator, first, last)
        # Read before the answer starts: a store that cannot answer is a 503, not a cut-off body.
        opening = next(batches, [])
        if media_type == CSV:
            resp.content_type = csv_format.CONTENT_TYPE
            resp.set_header("Content-Disposition", attachment(country, indicator))
            resp.stream = _csv(opening, batches)
        elif media_type == NDJSON:
            resp.content_type = NDJSON
            resp.stream = _ndjson(self._described(country, indicator), opening, batches)
        else:
            resp.stream = _json_array(opening, batches)


    def _described(self, country: str | None, indicator: str | None) -> bytes:
        """The descriptions an NDJSON export starts with, one a line (``load`` reads them back): those of
        every country and indicator, or of the one a filter names."""
        lines = []
        for by, field, only in ((COUNTRY, "Country", country), (INDICATOR, "Indicator", indicator)):
            described = self._store.descriptions(by)
            for code in [only] if only else sorted(described):
                if code in described:
                    lines.append(dumps({field: code, **described[code]}) + "\n")
        return "".join(lines).encode()


def attachment(country: str | None, indicator: str | None) -> str:
    """The CSV's Content-Disposition: named after the country and indicator it is filtered by, as the explore
    page names its downloads (``BRA_NGDP_R.csv``); ``growth.csv`` without either."""
    if not country and not indicator:
        return f'attachment; filename="{CSV_FILENAME}"'
    name = "_".join(name for name in (country, indicator) if name) + ".csv"
    plain = _PLAIN.sub("_", name)
    if plain == name:
        return f'attachment; filename="{name}"'
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(name, safe='')}"


def _batches(opening: list[Record], batches: Iterator[list[Record]]) -> Iterator[list[Record]]:
    """The batches, the one already read first, yielding to the loop before each next one is read."""
    if opening:
        yield opening
    for batch in batches:
        let_io_run()
        yield batch


def _json_array(opening: list[Record], batches: Iterator[list[Record]]) -> Iterator[bytes]:
    separator = b"["
    for batch in _batches(opening, batches):
        yield separator + _json_items(batch)
        separator = b","
    yield b"]" if separator == b"," else b"[]"


def _ndjson(described: bytes, opening: list[Record], batches: Iterator[list[Record]]) -> Iterator[bytes]:
    if described:
        yield described
    for batch in _batches(opening, batches):
        yield "".join([dumps(as_record(key, value)) + "\n" for key, value in batch]).encode()


def _json_items(batch: list[Record]) -> bytes:
    """The records of ``batch`` as the items of a JSON array, without its brackets, as the list writes them."""
    return dumps([as_record(key, value) for key, value in batch])[1:-1].encode()


def _csv(opening: list[Record], batches: Iterator[list[Record]]) -> Iterator[bytes]:
    yield csv_format.HEADER.encode()
    for batch in _batches(opening, batches):
        yield csv_format.write(batch, header=False)
