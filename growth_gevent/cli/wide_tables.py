"""Wide tables for ``load``: one row per country and indicator, one column per year, with the names beside the
codes, as the IMF and the World Bank publish them; read as a stream of records and sent in parts.

Three layouts are known by their columns, the IMF's World Economic Outlook "all countries" file (tab-separated
text despite its ``.xls`` name, Latin-1, or UTF-16 with a byte order mark since October 2020; a source line at
its end), the World Bank's indicator CSV (a UTF-8 byte order mark, a preamble before the header, a trailing
comma on every line) and its DataBank extract (``Series Code``, years headed ``1990 [YR1990]``, ``..`` for a
missing value, lines on the source at its end); any other is read when ``--country-column`` and
``--indicator-column`` name its code columns. The year columns are those whose header is a year (or
DataBank's form of one). A cell that is empty, ``n/a``, ``--`` or ``..`` is a
missing value, not a record; thousands separators (``1,873.288``) are dropped.

The file is read twice, never held whole: once to check every record with the server's own CSV parser (a bad
one anywhere sends nothing, named by its row and year), then to send it, as ``Country,Indicator,Value,Year``
CSV parts, under the server's limits.
"""

import array
import codecs
import csv
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO

from ..api import csv_format
from ..core.descriptions import COUNTRY, INDICATOR, Descriptions, parse_patch
from ..core.records import InvalidRecord, check_name
from .bulk_parts import BadFile, Part, packed

# Enough of a file to find its header after any preamble (the World Bank's is four lines).
HEAD_BYTES = 64 * 1024
HEAD_LINES = 10
MISSING = frozenset({"", "n/a", "--", ".."})
# A year column's header: the year, or DataBank's ``1990 [YR1990]``.
_YEAR = re.compile(r"([0-9]{1,9})(?: \[YR\1\])?")
# A number as JSON writes it, or with thousands separators.
_THOUSANDS = re.compile(r"-?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?")
_CSV_SPECIAL = re.compile('[",\r\n]')
_EXCEL = (b"\xd0\xcf\x11\xe0", b"PK\x03\x04")  # a binary workbook (.xls, .xlsx)
_SHOWN_COLUMNS = 12


@dataclass(frozen=True)
class Layout:
    """The columns of a wide table: the codes, and the names beside them where the layout has them."""

    country: str
    indicator: str
    country_name: str | None = None
    indicator_name: str | None = None
    units: str | None = None
    scale: str | None = None

    def names(self) -> tuple[str, ...]:
        return tuple(column for column in (self.country, self.indicator, self.country_name, self.indicator_name,
                                           self.units, self.scale) if column)


WEO = Layout("ISO", "WEO Subject Code", "Country", "Subject Descriptor", "Units", "Scale")  # the IMF's WEO
WORLD_BANK = Layout("Country Code", "Indicator Code", "Country Name", "Indicator Name")  # the World Bank's
DATABANK = Layout("Country Code", "Series Code", "Country Name", "Series Name")  # a World Bank DataBank extract
KNOWN = (WEO, WORLD_BANK, DATABANK)


def year_of(column: str) -> int | None:
    """The year a column's header names, if it is a year column."""
    match = _YEAR.fullmatch(column)
    return None if match is None else int(match[1])


def encoding_of(head: bytes) -> str:
    """The file's encoding by its byte order mark; UTF-8 without one (Latin-1 where that fails: ``WideFile``)."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return "utf-8-sig"


def recognise(head: bytes, path: str, country: str | None = None, indicator: str | None = None) -> "Found | None":
    """The layout of the file that starts with ``head`` and where its header is, if it is a wide table; None
    for a file of records (its header names Year and Value, or none is a year). BadFile for a wide table of a
    layout not known, naming the columns found, and for a workbook or a ``.xls`` file that is not text."""
    if head.startswith(_EXCEL):
        raise BadFile("an Excel workbook, not text: save it as CSV (or load the IMF's .xls, which is text)")
    text = head.decode(encoding_of(head), errors="ignore")  # a header is ASCII; the head may end mid-character
    lines = text.splitlines()[:HEAD_LINES]
    wanted = (Layout(country, indicator),) if country and indicator else KNOWN
    first: list[str] | None = None
    for number, line in enumerate(lines):
        delimiter = _delimiter(line)
        columns = [column.strip() for column in next(csv.reader([line], delimiter=delimiter), [])]
        if first is None and any(columns):
            first = columns
        for layout in wanted:
            if layout.country in columns and layout.indicator in columns:
                return Found(layout, number, delimiter)
    expected = country is not None or indicator is not None or path.lower().endswith(".xls")
    if first is None or not expected and (not any(year_of(column) is not None for column in first)
                                          or {"year", "value"} <= {column.lower() for column in first}):
        if expected:
            raise BadFile("an empty table: no header found")
        return None
    shown = ", ".join(first[:_SHOWN_COLUMNS]) + (f" and {len(first) - _SHOWN_COLUMNS} more"
                                                 if len(first) > _SHOWN_COLUMNS else "")
    if country or indicator:
        missing = [name for name in (country, indicator) if name and name not in first]
        raise BadFile(f"no column {' nor '.join(missing) or 'named by both flags'} in the header (columns found: "
                      f"{shown}); --country-column and --indicator-column name the code columns")
    raise BadFile(f"a wide table of a layout load does not know (columns found: {shown}): name its code columns "
                  f"with --country-column and --indicator-column (docs/operations.md, Loading files)")


def _delimiter(line: str) -> str:
    return "\t" if line.count("\t") > line.count(",") else ","


@dataclass(frozen=True)
class Found:
    layout: Layout
    header_line: int  # the header's index among the file's lines
    delimiter: str


class WideFile:
    """A wide table's records, read from ``open_file`` (called once a pass) as a stream, in the parts a load
    sends them in (the interface of ``bulk_parts.BulkFile``)."""

    format = "csv"

    def __init__(self, open_file: Callable[[], IO[bytes]], found: Found, head: bytes) -> None:
        self._open = open_file
        self._found = found
        self._encoding = encoding_of(head)
        self.names = Descriptions()  # the names of its codes, read by check()
        # The file's line and year of each record, in the order they are sent (8 bytes a record).
        self._lines, self._years = array.array("I"), array.array("I")

    def __len__(self) -> int:
        return len(self._lines)

    def check(self, max_bytes: int, max_records: int) -> None:
        """Every record read and checked as the server reads it, and the names kept: BadFile at the first bad
        one, by its row in the file."""
        try:
            self._check(max_bytes, max_records)
        except UnicodeDecodeError:
            if self._encoding != "utf-8-sig":
                raise BadFile(f"not {self._encoding.upper()} text") from None
            self._encoding = "latin-1"  # the IMF's, before UTF-16
            self._check(max_bytes, max_records)

    def _check(self, max_bytes: int, max_records: int) -> None:
        self.names, self._lines, self._years = Descriptions(), array.array("I"), array.array("I")
        for part in self.parts(max_bytes, max_records, keep=True):
            try:
                csv_format.parse_records(part.body.decode())
            except (InvalidRecord, csv_format.InvalidCSV) as error:
                raise BadFile(self._in_file(str(error), part)) from None

    def parts(self, max_bytes: int, max_records: int, start: int = 0, keep: bool = False) -> Iterator[Part]:
        """The records from ``start`` on, as CSV bodies of at most ``max_bytes`` and ``max_records`` records; with
        ``keep``, each record's line and the names are kept as they are read."""
        items = ((index, row) for index, row in enumerate(self._rows(keep)) if index >= start)
        header = csv_format.HEADER.encode()
        return packed(items, start, len(header), 0, max_bytes, max_records, self.place,
                      lambda rows: header + b"".join(rows))

    def place(self, index: int) -> str:
        return f"line {self._lines[index]}, year {self._years[index]}"

    def _in_file(self, message: str, part: Part) -> str:
        """The server's message about a part's row made the file's row, its year named."""
        found = re.search(r"\brow ([0-9]+)\b", message)
        if found is None or not 2 <= int(found[1]) <= part.records + 1:
            return message
        return message[:found.start()] + self.place(part.first + int(found[1]) - 2) + message[found.end():]

    def _rows(self, keep: bool) -> Iterator[bytes]:
        """Each record as a CSV row, in the file's order; with ``keep``, its line and the names kept."""
        layout, found = self._found.layout, self._found
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\r\n")
        with self._open() as binary:
            text = io.TextIOWrapper(binary, encoding=self._encoding, newline="")
            reader = csv.reader(text, delimiter=found.delimiter)
            header: list[str] = []
            at: dict[str, int] = {}
            years: list[tuple[int, int]] = []
            for row in reader:
                if not header:
                    if reader.line_num > found.header_line:
                        header = [column.strip() for column in row]
                        at = {column: header.index(column) for column in layout.names() if column in header}
                        years = [(position, year) for position, year in enumerate(map(year_of, header))
                                 if year is not None]
                    continue
                if len(row) <= max(at[layout.country], at[layout.indicator]):
                    if any(cell.strip() for cell in row[1:]):
                        raise BadFile(f"line {reader.line_num}: {len(row)} cells where the header has {len(header)}")
                    continue  # a blank line, or a note of one cell (the WEO's source line)
                country, indicator = row[at[layout.country]].strip(), row[at[layout.indicator]].strip()
                for column, code in ((layout.country, country), (layout.indicator, indicator)):
                    problem = check_name(column, code)
                    if problem:
                        raise BadFile(f"line {reader.line_num}: {problem}")
                if keep:
                    self._keep_names(row, at, country, indicator, reader.line_num)
                writer.writerow((country, indicator, ""))  # the names quoted as CSV needs, once a row
                prefix = buffer.getvalue()[:-2].encode()
                buffer.seek(0)
                buffer.truncate()
                for position, year in years:
                    cell = row[position].strip() if position < len(row) else ""
                    if cell in MISSING:
                        continue
                    if "," in cell and _THOUSANDS.fullmatch(cell):
                        cell = cell.replace(",", "")
                    if _CSV_SPECIAL.search(cell):  # no number holds one: say so, rather than split the cell
                        raise BadFile(f"line {reader.line_num}, year {year}: Value must be a number, not {cell!r}")
                    if keep:
                        self._lines.append(reader.line_num)
                        self._years.append(year)
                    yield b"%s%s,%d\r\n" % (prefix, cell.encode(), year)

    def _keep_names(self, row: list[str], at: dict[str, int], country: str, indicator: str, line: int) -> None:
        """The row's names kept as a patch, checked as an NDJSON file's or a PATCH's are; BadFile naming ``line``."""
        layout = self._found.layout

        def cell(column: str | None) -> str:
            return row[at[column]].strip() if column in at and at[column] < len(row) else ""

        country_fields = {"name": cell(layout.country_name)}
        indicator_fields = {"name": cell(layout.indicator_name), "units": cell(layout.units),
                            "scale": cell(layout.scale)}
        for by, code, cells in ((COUNTRY, country, country_fields), (INDICATOR, indicator, indicator_fields)):
            fields = {field: text for field, text in cells.items() if text}
            if fields:
                try:
                    self.names.apply(by, parse_patch(by, {code: fields}))
                except InvalidRecord as error:
                    raise BadFile(f"line {line}: {error}") from None
