"""A bulk file, JSON array, NDJSON or CSV, cut into bulk POST bodies (parts) under the server's limits, for
``load``.

Each record goes as its bytes are in the file (a JSON element, an NDJSON line, a CSV row after the file's
header), so the server reads what it would read in the whole file. Before anything is sent, every part is
checked with the server's own parsers (``api.strict_json``, ``api.csv_format``, ``core.records``), so that a bad
record anywhere refuses the file whole, named by its place in the file; only what the server's state
decides (a full store, a restart) can stop a load split into parts midway.
"""

import itertools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import falcon

from ..api import csv_format
from ..api.strict_json import parse_json
from ..core.descriptions import COUNTRY, FIELDS, INDICATOR, Descriptions, parse_patch
from ..core.records import InvalidRecord, parse_records

FORMATS = ("json", "ndjson", "csv")
# NDJSON is sent as the JSON array of its lines: the bulk POST takes JSON and CSV.
CONTENT_TYPES = {"json": falcon.MEDIA_JSON, "ndjson": falcon.MEDIA_JSON, "csv": csv_format.MEDIA_TYPE}
# A line and its end, as a CSV reader splits lines (newline=""); the last may have none.
_LINE_END_KEPT = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
DESCRIBED_FIELDS = frozenset(FIELDS[INDICATOR])
_PLACE = re.compile(r"\b(record|row) ([0-9]+)\b")


class BadFile(ValueError):
    """A file that cannot be loaded as it is; the message says where and why, in the file's own numbers."""


def format_of(path: str, data: bytes) -> str:
    """How a file is read unless --format says: by its extension (.csv, .ndjson or .jsonl, .json), else by its
    first character, ``[`` a JSON array, ``{`` NDJSON, anything else CSV (stdin, ``.txt``)."""
    name = path.lower()
    if name.endswith(".csv"):
        return "csv"
    if name.endswith((".ndjson", ".jsonl")):
        return "ndjson"
    if name.endswith(".json"):
        return "json"
    first = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    return "json" if first == b"[" else "ndjson" if first == b"{" else "csv"


@dataclass(frozen=True)
class Part:
    body: bytes
    first: int  # the index in the file of its first record
    records: int


class BulkFile:
    """The records of a file as their bytes, and the parts a load sends them in."""

    def __init__(self, data: bytes, file_format: str) -> None:
        self.format = file_format
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise BadFile(f"not UTF-8: {error.reason} at byte {error.start}") from None
        self.names = Descriptions()  # NDJSON's description lines, as export writes them
        self._header = b""
        self._header_lines = 0
        # The line where each record starts in the file (NDJSON, CSV), for messages.
        self._lines: list[int] = []
        if file_format == "csv":
            self._items = self._csv_rows(text)
        elif file_format == "ndjson":
            self._items = self._ndjson_lines(text)
        else:
            self._items = _json_items(text)

    def __len__(self) -> int:
        return len(self._items)

    def parts(self, max_bytes: int, max_records: int, start: int = 0) -> Iterator[Part]:
        """The records from ``start`` on, in bodies of at most ``max_bytes`` and ``max_records`` records each."""
        # A JSON body is its items between brackets, a comma after each but the last; a CSV one the header, then rows.
        if self.format == "csv":
            overhead, separator = len(self._header), 0
            body: Callable[[list[bytes]], bytes] = lambda items: self._header + b"".join(items)  # noqa: E731
        else:
            overhead, separator = 2, 1
            body = lambda items: b"[" + b",".join(items) + b"]"  # noqa: E731
        items = itertools.islice(enumerate(self._items), start, None)
        return packed(items, start, overhead, separator, max_bytes, max_records, self.place, body)

    def check(self, max_bytes: int, max_records: int) -> None:
        """Every part read as the server reads it: BadFile naming the first bad record by its place in the file."""
        for part in self.parts(max_bytes, max_records):
            try:
                if self.format == "csv":
                    csv_format.parse_records(part.body.decode())
                else:
                    parse_records(parse_json(part.body, unique_keys=True))
            except (InvalidRecord, csv_format.InvalidCSV) as error:
                raise BadFile(self._in_file(str(error), part)) from None
            except falcon.HTTPError as error:
                raise BadFile(self._in_file(error.description or error.title, part)) from None

    def place(self, index: int) -> str:
        """Where record ``index`` is, as a user finds it: its line, or its index in the JSON array."""
        if self.format == "json":
            return f"record {index}"
        return f"{'row' if self.format == 'csv' else 'line'} {self._lines[index]}"

    def _in_file(self, message: str, part: Part) -> str:
        """The server's message about ``part``, its record or row number made the file's."""
        found = _PLACE.search(message)
        if found is None:
            return message
        number = int(found[2])
        if found[1] == "record" and self.format != "csv" and number < part.records:
            place = self.place(part.first + number)
        elif found[1] == "row" and self.format == "csv" and number > self._header_lines:
            # The part's rows are lines of the file in a row, after the header's lines.
            place = f"row {self._lines[part.first] + number - self._header_lines - 1}"
        else:
            return message
        return message[:found.start()] + place + message[found.end():]

    def _ndjson_lines(self, text: str) -> list[bytes]:
        items = []
        for number, line in enumerate(text.split("\n"), 1):
            line = line.strip()
            if not line:
                continue
            try:
                document = json.loads(line)
            except ValueError as error:
                raise BadFile(f"line {number}: not valid JSON: {error}") from None
            if self._described(document, number):
                continue
            items.append(line.encode())
            self._lines.append(number)
        return items

    def _described(self, document: object, number: int) -> bool:
        """Whether ``document`` is a description (``{"Country": "BRA", "name": "Brazil"}``: a name, no Year nor
        Value), kept in ``names``; BadFile for a bad one."""
        if type(document) is not dict or "Year" in document or "Value" in document or DESCRIBED_FIELDS.isdisjoint(
                document):
            return False
        by = COUNTRY if "Country" in document else INDICATOR
        fields = {key: text for key, text in document.items() if key not in ("Country", "Indicator")}
        try:
            self.names.apply(by, parse_patch(by, {document.get(by.capitalize()): fields}))
        except InvalidRecord as error:
            raise BadFile(f"line {number}: {error}") from None
        return True

    def _csv_rows(self, text: str) -> list[bytes]:
        """The file's rows after its header, each with the blank lines before it, so that the rows of a part
        are lines of the file in a row; ``_lines`` holds where each starts."""
        lines = [match.group() for match in _LINE_END_KEPT.finditer(text)]
        reader = csv_format.csv.reader(iter(lines), strict=True)
        rows, start = [], 0
        try:
            for row in reader:
                if not row and self._header_lines:
                    continue  # a blank line: sent with the row after it
                raw = "".join(lines[start:reader.line_num])
                if not self._header_lines:
                    self._header = (raw if raw.endswith(("\n", "\r")) else raw + "\r\n").encode()
                    self._header_lines = reader.line_num
                else:
                    rows.append(raw.encode())
                    self._lines.append(start + 1)
                start = reader.line_num
        except csv_format.csv.Error as error:
            raise BadFile(f"not valid CSV: row {reader.line_num}: {error}") from None
        return rows


def packed(items: Iterator[tuple[int, bytes]], start: int, overhead: int, separator: int, max_bytes: int,
           max_records: int, place: Callable[[int], str], body: Callable[[list[bytes]], bytes]) -> Iterator[Part]:
    """``items`` (index, bytes) from ``start`` on, in bodies made by ``body`` of at most ``max_bytes`` (each body
    ``overhead`` bytes, and ``separator`` bytes an item) and ``max_records`` items; one empty body for no items
    from 0. Only one body's items are held at a time."""
    first, size = start, overhead
    held: list[bytes] = []
    for index, item in items:
        length = len(item) + separator
        if overhead + length > max_bytes:
            raise BadFile(f"{place(index)} alone is more than {max_bytes} bytes, the largest body the server takes")
        if held and (size + length > max_bytes or len(held) == max_records):
            yield Part(body(held), first, len(held))
            first, size, held = index, overhead, []
        size += length
        held.append(item)
    if held or start == 0:
        yield Part(body(held), first, len(held))


def _json_items(text: str) -> list[bytes]:
    """The elements of a JSON array, each as its text in the file."""
    decoder = json.JSONDecoder()
    position = _skip_blank(text, 0)
    if text[position:position + 1] != "[":
        raise BadFile("not a JSON array of records (a file of one record a line is NDJSON: --format ndjson)")
    items: list[bytes] = []
    position = _skip_blank(text, position + 1)
    closed = text[position:position + 1] == "]"
    while not closed:
        try:
            _, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise BadFile(f"not valid JSON: {error}") from None
        items.append(text[position:end].encode())
        position = _skip_blank(text, end)
        closed = text[position:position + 1] == "]"
        if not closed:
            if text[position:position + 1] != ",":
                raise BadFile(f"not valid JSON: ',' or ']' expected at char {position}")
            position = _skip_blank(text, position + 1)
    if text[_skip_blank(text, position + 1):]:
        raise BadFile(f"not valid JSON: extra data after the array, at char {position + 1}")
    return items


def _skip_blank(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position
