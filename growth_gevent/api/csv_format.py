"""Records as CSV (RFC 4180), for pandas and spreadsheets: pages and series written as
``Country,Indicator,Value,Year`` rows, and bulk loads read from them.

Nothing here knows HTTP: a body that is not CSV raises :class:`InvalidCSV`, a row that is not a valid
record :class:`~growth_gevent.core.records.InvalidRecord`; the caller maps them (400, 422).
"""

import csv
import io
import re
from collections.abc import Callable, Sequence

import ujson

from ..core.records import (
    COMMON_YEARS,
    MAX_YEAR,
    PAUSE_EVERY,
    InvalidRecord,
    check_name,
    check_year,
    is_finite_number,
    shared_upper,
    underflows,
)

MEDIA_TYPE = "text/csv"
# RFC 4180's default charset is US-ASCII: names may be any Unicode, so say what the bytes are.
CONTENT_TYPE = "text/csv; charset=utf-8"
COLUMNS = ("Country", "Indicator", "Value", "Year")
_LOWER_COLUMNS = tuple(name.lower() for name in COLUMNS)
# JSON's number grammar (RFC 8259), so that a CSV value is read as the same JSON body would be: float()
# alone would also take "nan", "inf", " 1", "1_0" and other scripts' digits.
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_YEAR_CHARS = len(str(-MAX_YEAR))
_BOM = "\ufeff"
_SPECIAL = re.compile('[",\r\n]')
# OWASP's "CSV injection": a cell beginning with one of these is a formula to a spreadsheet, after any
# whitespace too (LibreOffice trims it, and evaluates " =1+1"). A cell begins where a name does, or after a
# ';', where a spreadsheet whose locale splits at semicolons starts one (quotes there open a quoted cell).
# Such a cell gets one more apostrophe at its start (a spreadsheet shows '=X as the text =X); apostrophes
# already there count in, so that reading back removes exactly one.
_FORMULA = re.compile("(^|;)(\"*)('*\\s*[-=+@\t\r])")
_ESCAPED_FORMULA = re.compile("(^|;)(\"*)'('*\\s*[-=+@\t\r])")
HEADER = ",".join(COLUMNS) + "\r\n"

Key = tuple[str, str, int]


class InvalidCSV(ValueError):
    """A body that is not CSV a reader can split into rows; the message names the row."""


def rows_at_most(body: bytes | bytearray) -> tuple[int, int]:
    """``(records, separators)`` that ``body`` can hold at most, counted before parsing, at C speed.

    The lines (split at ``\\r\\n``, ``\\n`` or ``\\r``, as a CSV reader splits them) bound the rows, one of
    them the header; commas and line breaks bound the fields a parse can make.
    """
    line_breaks = body.count(b"\n") + body.count(b"\r") - body.count(b"\r\n")
    lines = line_breaks + (not body.endswith((b"\n", b"\r")))
    return max(0, lines - 1), line_breaks + body.count(b",")


def parse_records(text: str, pause: Callable[[], None] | None = None) -> list[tuple[Key, int | float]]:
    """Validate a CSV bulk body; return ``[(key, value), ...]`` in row order, as the JSON body's
    ``records.parse_records`` does.

    The header row is required and names the columns Country, Indicator, Value and Year, in any order and case
    (other columns are ignored, like extra fields of a JSON record). Value and Year are read as JSON
    reads a number; a leading byte order mark (Excel's "CSV UTF-8") and blank lines are skipped.
    Rows are numbered as a spreadsheet shows them, the header being row 1. All-or-nothing: the first
    invalid row raises.
    """
    reader = csv.reader(io.StringIO(text.removeprefix(_BOM), newline=""), strict=True)
    try:
        header = next(reader, [])
        country_at, indicator_at, value_at, year_at = _columns(header)
        width = len(header)
        names: dict[str, str] = {}
        years: dict[str, int] = {}
        parsed: list[tuple[Key, int | float]] = []
        append = parsed.append
        for count, row in enumerate(reader, 1):
            if pause is not None and count % PAUSE_EVERY == 0:
                pause()
            if len(row) != width:
                if not row:
                    continue
                raise InvalidRecord(f"row {reader.line_num}: has {len(row)} fields, the header has {width}")
            country, indicator = row[country_at], row[indicator_at]
            country_key = names.get(country) or _name(names, "Country", country, reader.line_num)
            indicator_key = names.get(indicator) or _name(names, "Indicator", indicator, reader.line_num)
            year = years.get(row[year_at])
            if year is None:
                year = _year(years, row[year_at], reader.line_num)
            append(((country_key, indicator_key, year), _value(row[value_at], reader.line_num)))
    except csv.Error as error:
        raise InvalidCSV(f"request body is not valid CSV: row {reader.line_num}: {error}") from None
    return parsed


def _columns(header: list[str]) -> tuple[int, ...]:
    """Where each of COLUMNS is, in their order, named in any case (as the filters are: ``country`` too)."""
    names = [name.lower() for name in header]
    if sorted(name for name in names if name in _LOWER_COLUMNS) != sorted(_LOWER_COLUMNS):
        raise InvalidRecord(f"the header row must name each of the columns {', '.join(COLUMNS)} once; "
                            f"row 1 is {','.join(header)[:200]!r}")
    return tuple(names.index(name) for name in _LOWER_COLUMNS)


def _name(names: dict[str, str], field: str, raw: str, row: int) -> str:
    text = _ESCAPED_FORMULA.sub(r"\1\2\3", raw) if "'" in raw else raw
    problem = check_name(field, text)
    if problem:
        raise InvalidRecord(f"row {row}: {problem}")
    key = names[raw] = shared_upper(names, text)
    return key


def _year(years: dict[str, int], text: str, row: int) -> int:
    if not _INTEGER.fullmatch(text):
        raise InvalidRecord(f"row {row}: Year must be an integer")
    # Longer, a year is out of range whatever its digits (and int() would refuse 4,300 digits and more).
    year = int(text) if len(text) <= _YEAR_CHARS else MAX_YEAR + 1
    problem = check_year(year)
    if problem:
        raise InvalidRecord(f"row {row}: {problem}")
    year = years[text] = COMMON_YEARS.get(year, year)  # as records.parse_records shares them
    return year


def _value(text: str, row: int) -> int | float:
    value = None
    if _NUMBER.fullmatch(text):
        try:  # an integer unless it has a fraction or an exponent, as JSON reads it
            value = float(text) if "." in text or "e" in text or "E" in text else int(text)
        except ValueError:  # Python refuses to convert 4,300 digits and more
            pass
    if not is_finite_number(value):
        raise InvalidRecord(f"row {row}: Value must be a finite number")
    if underflows(text, value):
        raise InvalidRecord(f"row {row}: Value {text[:40]} is too small for a double: it would be read as 0")
    return value


def write(records: Sequence[tuple[Key, int | float]], header: bool = True) -> bytes:
    """The CSV body of ``records`` (``(key, value)`` pairs): the header (unless ``header`` is False: a
    batch of an export after its first), then a row each. Values are
    written as ujson writes them in the JSON body (shortest round-trip form), names quoted where RFC 4180
    needs it.

    Formatted by hand: csv.writer takes longer. One string, as the JSON body is: streamed in chunks, a
    page cost the server more CPU (docs/performance.md#csv-by-hand-as-one-string).
    """
    quoted: dict[str, str] = {}
    # One C call writes every value as the JSON does; numbers hold no commas.
    values = ujson.dumps([value for _, value in records])[1:-1].split(",") if records else []
    rows = [HEADER] if header else []
    for ((country, indicator, year), _), value in zip(records, values, strict=True):
        country = quoted.get(country) or _quote(quoted, country)
        indicator = quoted.get(indicator) or _quote(quoted, indicator)
        rows.append(f"{country},{indicator},{value},{year}\r\n")
    return "".join(rows).encode()


def _quote(quoted: dict[str, str], name: str) -> str:
    """``name`` as an RFC 4180 field: in double quotes, its own doubled, when it holds one, a comma or a
    line break (names never hold a line break: control characters are refused), or when it would be a
    formula, which is written after an apostrophe as OWASP says."""
    escaped = _FORMULA.sub(r"\1\2'\3", name)
    field = quoted[name] = (
        '"' + escaped.replace('"', '""') + '"' if escaped != name or _SPECIAL.search(name) else name)
    return field
