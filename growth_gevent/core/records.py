"""What a growth record is: validation of incoming records and the normalised store key.

A key is the tuple ``(COUNTRY, INDICATOR, year)``. Country and indicator are case-insensitive, so
they are stored upper-case; a bulk load shares them (42,450 records share a few hundred strings), and a
store keeps its own copy of each (core.allocator.kept_name).
"""

import re
import sys
from collections.abc import Callable
from typing import Any, TypeGuard
from urllib.parse import quote

_FLOAT_MAX = sys.float_info.max
_NUMBER_TYPES = (int, float)
PAUSE_EVERY = 5000
# Longest request line the HTTP layer reads, its line end included (414 from this many bytes on): 8 KiB, as
# pywsgi's and nginx's (large_client_header_buffers); ours, not read from pywsgi, whose constant is not public.
# Stated here on the ground floor because the longest addressable name below depends on it.
MAX_REQUEST_LINE = 8192
# A record must be addressable: its URL, both names as stored (upper-cased) percent-encoded and a year of up to
# this many characters, must fit in a request line (414 past it), whatever the other name.
YEAR_URL_BYTES = 100
# The years a record may have, in a bulk body and in a PUT's URL alike (and so every stored record has a
# URL): nine digits at most. Every calendar year, and period codes such as YYYYMMDD; an int32 in any
# client, exact as a double (Redis's Lua); and far within YEAR_URL_BYTES.
MAX_YEAR = 999_999_999
# The years of nearly every dataset, made at import: a parse shares these, so that a store's series keep years
# made here, not among the parse's objects (core/allocator.py says why that matters).
COMMON_YEARS = {year: year for year in range(1800, 2101)}
MAX_NAME_URL_BYTES = (MAX_REQUEST_LINE - len("DELETE /api/v1/growth/// HTTP/1.1\r\n") - YEAR_URL_BYTES) // 2
# What a PUT body holds besides its record's names: the field names, the value's digits, the year, spaces and
# line breaks, a field a client adds. A PUT body is at most its names as JSON can write them and this.
UPDATE_BODY_ROOM = 1024
# Upper-casing makes at most 3 characters of one ('ΐ' -> 'Ϊ́'), and UTF-8 percent-encoded takes at most 12 bytes a
# character: a name this short fits without encoding it.
_SURELY_SHORT = MAX_NAME_URL_BYTES // 36
# Two plain names that short, as a URL's path joins them: what nearly every write names.
_PLAIN_NAMES = re.compile(f"[A-Za-z0-9_-]{{1,{_SURELY_SHORT}}}/[A-Za-z0-9_-]{{1,{_SURELY_SHORT}}}")
CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f]")
# ASCII letters, digits, '_' and '-', no '.': a name that every check below passes, known in one match.
_PLAIN_NAME = re.compile("[A-Za-z0-9_-]+")


Key = tuple[str, str, int]  # (COUNTRY, INDICATOR, year)
Number = int | float  # finite
Record = tuple[Key, Number]


class InvalidRecord(ValueError):
    """Input that is not a valid record; the message says which record and field."""


def is_finite_number(value: Any) -> TypeGuard[Number]:
    """A JSON number that is not a bool, NaN or +-Infinity (the comparisons reject all three)."""
    return type(value) in _NUMBER_TYPES and -_FLOAT_MAX <= value <= _FLOAT_MAX


def make_key(country: str, indicator: str, year: int) -> Key:
    """The store key for path segments: strings and an int."""
    return country.upper(), indicator.upper(), year


def key_to_write(country: str, indicator: str, year: int) -> Key:
    """The key of the record a URL names (``make_key``), or InvalidRecord for names or a year that no record
    may have (``check_name``, ``check_year``). Two plain names and a year in range, what nearly every write
    names, are known in one match and a comparison."""
    if not (_PLAIN_NAMES.fullmatch(f"{country}/{indicator}") and -MAX_YEAR <= year <= MAX_YEAR):
        problem = check_name("Country", country) or check_name("Indicator", indicator) or check_year(year)
        if problem:
            raise InvalidRecord(problem)
    return country.upper(), indicator.upper(), year


def check_name(field: str, value: object) -> str | None:
    """Country and Indicator: non-empty strings that can be written in a URL path segment, each
    naming one thing: not ``.`` or ``..``, which clients resolve away, nor control characters; the length
    limit holds for the name as stored, upper-cased, so that every stored record has a URL."""
    if type(value) is not str or not value:
        return f"{field} must be a non-empty string"
    if len(value) <= _SURELY_SHORT and _PLAIN_NAME.fullmatch(value):  # what nearly every name is: none of the below
        return None
    if "/" in value:
        return f"{field} must not contain '/'"
    if value == "." or value == "..":
        return f"{field} must not be '.' or '..'"
    # Lone surrogates cannot be written in a URL; U+FFFD is what undecodable path bytes become.
    if "\ufffd" in value or not value.isascii() and has_surrogates(value):
        return f"{field} must be valid UTF-8 text"
    if not value.isprintable() and CONTROL_CHARACTERS.search(value):
        return f"{field} must not contain control characters"
    if len(value) > _SURELY_SHORT and len(quote(value.upper(), safe="")) > MAX_NAME_URL_BYTES:
        return f"{field} must be at most {MAX_NAME_URL_BYTES} bytes long once upper-cased and percent-encoded in a URL"
    return None


def has_surrogates(text: str) -> bool:
    """A lone surrogate in ``text`` (``\\ud800`` in JSON): not UTF-8 text, and no URL or Redis can carry it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_value(value: object) -> str | None:
    if not is_finite_number(value):
        return "Value must be a finite number"
    return None


def underflows(literal: str, value: float) -> bool:
    """True when the number written ``literal`` is not zero but was read as ``value`` 0: too small for a
    double (``1e-400``)."""
    return value == 0 and bool(literal.lower().partition("e")[0].strip("-0."))


def check_year(value: object) -> str | None:
    if type(value) is not int:
        return "Year must be an integer"
    if not -MAX_YEAR <= value <= MAX_YEAR:
        return f"Year must be between {-MAX_YEAR} and {MAX_YEAR}"
    return None


def parse_records(payload: object, pause: Callable[[], object] | None = None) -> list[Record]:
    """Validate a bulk payload; return ``[(key, value), ...]`` in payload order.

    ``pause``, when given, is called between slices of ``PAUSE_EVERY`` records, so that a caller on
    an event loop can let other work run during a long validation.

    All-or-nothing: the first invalid record raises :class:`InvalidRecord` naming its index and field.
    This loop runs once per record of a bulk load, so the valid case is checked inline, names are
    upper-cased once per distinct spelling, and the field-by-field diagnosis runs only on failure.

    What is kept must not point into the parser's objects: a kept year or value made by the JSON parser would
    pin the memory of every object around it (docs/performance.md#nothing-kept-points-into-the-parsers-objects).
    So years are shared per distinct year (COMMON_YEARS's, when they are among them) and values are copied
    (``value * 1`` makes a new number of the same type). Names are not interned here: a store keeps its own
    copy of a new name (core.allocator.kept_name).
    """
    if type(payload) is not list:
        raise InvalidRecord("body must be a JSON array of records")
    names: dict[str, str] = {}
    years = dict(COMMON_YEARS)
    parsed: list[Record] = []
    append = parsed.append
    for start in range(0, len(payload), PAUSE_EVERY):
        if pause is not None and start:
            pause()
        for item in payload[start:start + PAUSE_EVERY]:
            try:  # names seen before, in subscripts: what nearly every record of a load is
                country, indicator, year, value = (names[item["Country"]], names[item["Indicator"]], item["Year"],
                                                   item["Value"])
            except (KeyError, TypeError):  # a spelling not seen yet, a field missing, an item that is no object
                country, indicator, year, value = _with_new_names(item, names, len(parsed))
            if (type(year) is int and -MAX_YEAR <= year <= MAX_YEAR
                    and type(value) in _NUMBER_TYPES and -_FLOAT_MAX <= value <= _FLOAT_MAX):
                append(((country, indicator, years.setdefault(year, year)), value * 1))
                continue
            raise InvalidRecord(f"record {len(parsed)}: {_problem(item)}")
    return parsed


def _with_new_names(item: object, names: dict[str, str], index: int) -> tuple[str, str, Any, Any]:
    """A record's names (its spellings learnt in ``names``), year and value, the last two as given (None when
    missing); InvalidRecord for an item that is no object, or a name that is not one."""
    if type(item) is not dict:
        raise InvalidRecord(f"record {index}: must be an object")
    for field in ("Country", "Indicator"):
        spelling: Any = item.get(field)
        problem = check_name(field, spelling)
        if problem:
            raise InvalidRecord(f"record {index}: {problem}")
        if spelling not in names:
            names[spelling] = shared_upper(names, spelling)
    return names[item["Country"]], names[item["Indicator"]], item.get("Year"), item.get("Value")


def shared_upper(names: dict[str, str], name: str) -> str:
    """``name`` upper-cased, one string for every spelling of it in ``names`` (a parse's spellings -> names)."""
    upper = name.upper()
    return names.setdefault(upper, upper)


def _problem(item: object) -> str | None:
    if type(item) is not dict:
        return "must be an object"
    return (check_name("Country", item.get("Country")) or check_name("Indicator", item.get("Indicator"))
            or check_value(item.get("Value")) or check_year(item.get("Year")))


def parse_value_update(payload: object, key: Key) -> Number:
    """The body of a PUT of the record ``key``: ``{"value": number}``, ``{"Value": number}``, or the record
    as a GET returns it, whose Country, Indicator (either case, as in URLs) and Year, when given, must be
    ``key``'s; other fields are ignored, as a bulk load ignores them. Return the number."""
    if type(payload) is not dict or ("value" in payload) == ("Value" in payload):
        raise InvalidRecord('body must be a JSON object {"value": number}, or the record with its "Value"')
    field = "value" if "value" in payload else "Value"
    value = payload[field]
    if not is_finite_number(value):
        raise InvalidRecord(f"{field} must be a finite number")
    for name, expected in zip(("Country", "Indicator"), key[:2], strict=True):
        given = payload.get(name, expected)
        if type(given) is not str or given.upper() != expected:
            raise InvalidRecord(f"{name} must be the URL's, {expected!r}, or left out")
    year = payload.get("Year", key[2])
    if type(year) is not int or year != key[2]:
        raise InvalidRecord(f"Year must be the URL's, {key[2]}, or left out")
    return value


def max_update_body_bytes(key: Key) -> int:
    """The largest PUT body of the record ``key`` that is read (413 past it): what the record can be as JSON,
    its names written as any encoder writes them (at most 3 bytes for each of their UTF-8 bytes: a \\uXXXX
    for 2 or 3, a surrogate pair's 12 for 4; 6 for an 'I' or 'S', which the body may name in another case,
    'ı' or 'ſ', \\u0131 or \\u017f) and UPDATE_BODY_ROOM for the rest: about a kilobyte, where a bound of the
    record's kind let each held PUT body hold 64 KiB of the body budget."""
    names = key[0] + key[1]
    return 3 * (len(names.encode()) + names.count("I") + names.count("S")) + UPDATE_BODY_ROOM


def as_record(key: Key, value: Number) -> dict[str, str | int | float]:
    """The JSON shape of one record, as the challenge returns it."""
    country, indicator, year = key
    return {"Country": country, "Indicator": indicator, "Value": value, "Year": year}
