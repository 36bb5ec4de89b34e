"""Query parameters: one rule for every route, the filters of the list and the export, and paging.

The rule (docs/api.md): a route takes the parameters it names, each at most once, a blank one counting as
not given; any other name is a 400 that names the known ones, so that a misspelt filter (``contry=``) is
not an answer with every record. A name beginning with ``_`` is the client's own and ignored: jQuery's
cache buster ``_=1700000000000`` and its kind. ``format`` is a parameter of the routes that offer a
choice of formats (``representation.negotiate``): on any other it is unknown, so a 400 too. The HTML pages
(``static.Page``) read no query: theirs is their script's state.
"""

import re
from typing import overload

import falcon

from ..core.records import Key
from .cursor import InvalidCursor, decode_cursor

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
# A page's cost grows with its offset (Redis reads past every skipped record); deeper pages follow
# "next", whose cursor costs what a first page costs.
MAX_OFFSET = 10000
NONE: frozenset[str] = frozenset()
FILTERS = frozenset({"country", "indicator", "year", "from", "to"})
LIST = FILTERS | {"limit", "offset", "cursor", "format"}
EXPORT = FILTERS | {"format"}
SERIES = frozenset({"from", "to", "format"})
_INTEGER = re.compile(r"-?[0-9]+")


def query(req: falcon.Request, allowed: frozenset[str]) -> dict[str, str]:
    """The query parameters ``allowed``, each given at most once; blank ones count as not given, and names
    beginning with ``_`` are ignored. Any other name is a 400."""
    unknown = sorted(name for name in req.params if name not in allowed and name[:1] != "_")
    if unknown:
        known = f"known: {', '.join(sorted(allowed))}" if allowed else "this route takes none"
        raise falcon.HTTPBadRequest(description=f"unknown query parameter {unknown[0]!r}; {known}")
    params: dict[str, str] = {}
    for name, value in req.params.items():
        if name[:1] == "_":
            continue
        if not isinstance(value, str):  # a list: the name given more than once
            raise falcon.HTTPBadRequest(description=f"query parameter {name!r} is given more than once")
        if value:
            params[name] = value
    return params


def none(req: falcon.Request) -> None:
    """The rule on a route that takes no query parameter, tested only when there is a query."""
    if req.query_string:
        query(req, NONE)


@overload
def integer(params: dict[str, str], name: str, default: int, lowest: int | None = None,
            highest: int | None = None) -> int: ...
@overload
def integer(params: dict[str, str], name: str, default: None = None, lowest: int | None = None,
            highest: int | None = None) -> int | None: ...
def integer(params: dict[str, str], name: str, default: int | None = None, lowest: int | None = None,
            highest: int | None = None) -> int | None:
    raw = params.get(name)
    if raw is None:
        return default
    if not _INTEGER.fullmatch(raw):
        raise falcon.HTTPBadRequest(description=f"{name} must be an integer")
    try:
        value = int(raw)
    except ValueError:  # Python refuses to convert 4,300 digits and more
        raise falcon.HTTPBadRequest(description=f"{name} is out of range") from None
    if (lowest is not None and value < lowest) or (highest is not None and value > highest):
        bounds = f"between {lowest} and {highest}" if highest is not None else f"at least {lowest}"
        raise falcon.HTTPBadRequest(description=f"{name} must be {bounds}")
    return value


def year_range(params: dict[str, str], year: int | None = None) -> tuple[int | None, int | None]:
    """``from``/``to`` (inclusive), narrowed to ``year`` when one is given; ``from`` after ``to`` is a 400,
    not an answer of no records."""
    first, last = integer(params, "from"), integer(params, "to")
    if first is not None and last is not None and first > last:
        raise falcon.HTTPBadRequest(description=f"from ({first}) is after to ({last})")
    if year is not None:
        first = year if first is None else max(first, year)
        last = year if last is None else min(last, year)
    return first, last


def filters(params: dict[str, str]) -> tuple[str | None, str | None, int | None, int | None]:
    """The list's and the export's filters, as the store takes them: country and indicator (upper-case, or
    None), and the first and last year (or None)."""
    country, indicator = params.get("country"), params.get("indicator")
    first, last = year_range(params, integer(params, "year"))
    return country and country.upper(), indicator and indicator.upper(), first, last


def paging(params: dict[str, str]) -> tuple[int, int, Key | None]:
    """``limit``, ``offset`` and the key after which the page starts (``cursor``; None without one)."""
    limit = integer(params, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    offset = integer(params, "offset", 0, 0)
    if offset > MAX_OFFSET:
        raise falcon.HTTPBadRequest(description=f'offset is at most {MAX_OFFSET}; follow "next" to page further')
    raw = params.get("cursor")
    if raw is None:
        return limit, offset, None
    if offset:
        raise falcon.HTTPBadRequest(description="cursor and offset cannot be combined: the cursor says where "
                                                "the page starts")
    try:
        return limit, offset, decode_cursor(raw)
    except InvalidCursor:
        raise falcon.HTTPBadRequest(description='cursor is not one this service gave; pass a page\'s "next" '
                                                'as it is') from None
