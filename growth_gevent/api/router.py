"""The app's router: falcon's compiled router, asked after a record's path is looked for.

A record's path is every GET, PUT and DELETE of a record, the hot path. Falcon's router reaches its route
after the literals and the pattern of the routes beside it (``post``, ``size``, ``export.{format}``...) and
a converter's method call; ``RecordRouter.find`` takes it with one regex and one set look-up, and hands
every other path, and each of a record's shape that another route may take, to falcon's router unchanged
(docs/performance.md#falcons-own-floor).
"""

import re
from typing import Any

import falcon
import falcon.inspect
from falcon.routing import CompiledRouter
from falcon.routing.compiled import UnacceptableRouteError

# Canonical years only, so that one record has one URL: ASCII digits, no leading zero, no "-0".
_YEAR = re.compile(r"0|-?[1-9][0-9]{0,3999}")
_RECORD_FIELDS = "/{country}/{indicator}/{year:year}"
_NOTHING = re.compile(r"(?!)")
_CONVERTER = re.compile(r"\{\w+:(\w+)")


class YearConverter(falcon.routing.BaseConverter):
    """A year path segment, in the one form JSON writes an integer: ASCII digits with an optional
    minus, no leading zero, no ``-0``. Any other spelling is not a record's URL (404): int() would also
    take ``+5``, ``1_000``, ``0001``, ``-0`` and other scripts' digits, several URLs for one record."""

    def convert(self, value: str) -> int | None:
        return int(value) if _YEAR.fullmatch(value) else None


class RecordRouter(CompiledRouter):
    """Falcon's router, with ``record_path`` (``<literal prefix>/{country}/{indicator}/{year:year}``)
    answered first. A route added beside it that may take some of its paths either names its country
    segment as a literal (the job status, ``/api/v1/growth/post/status/{job}``: country ``post``), which
    the fast path then leaves to falcon, or is refused, so that no route is ever shadowed unawares."""

    __slots__ = ("_record_path", "_segments", "_prefix", "_match", "_taken", "_resource", "_method_map")

    def __init__(self, record_path: str) -> None:
        super().__init__()
        prefix = record_path.removesuffix(_RECORD_FIELDS)
        if prefix == record_path or "{" in prefix:
            raise ValueError(f"not a literal prefix and {_RECORD_FIELDS}: {record_path}")
        self.options.converters["year"] = YearConverter
        self._record_path = record_path
        self._segments = record_path.lstrip("/").split("/")
        self._prefix = prefix + "/"
        self._match = _NOTHING.match  # until the record's route is added
        self._taken: set[str] = set()  # the countries other routes take from the fast path
        self._resource: object = None
        self._method_map: dict[str, Any] = {}

    def add_route(self, uri_template: str, resource: object, **kwargs: Any) -> None:
        super().add_route(uri_template, resource, **kwargs)
        if uri_template == self._record_path:
            # "{}" is no route's literal segment: the answer is the record's route, its method map as falcon holds it.
            route = super().find(self._prefix + "{}/{}/0")
            if route is None or route[3] != self._record_path:
                raise UnacceptableRouteError(f"{route and route[3]} takes the paths of {uri_template}")
            self._resource, self._method_map = resource, route[1]
            self._match = re.compile(re.escape(self._prefix) + rf"([^/]*)/([^/]*)/({_YEAR.pattern})\Z").match
        else:
            taken = self._country_taken_by(uri_template)
            if taken is not None:
                self._taken.add(taken)

    def find(self, uri: str, req: falcon.Request | None = None
             ) -> tuple[object, dict[str, Any], dict[str, Any], str | None] | None:
        match = self._match(uri)
        if match is not None:
            country, indicator, year = match.groups()
            if country not in self._taken:
                return (self._resource, self._method_map,
                        {"country": country, "indicator": indicator, "year": int(year)}, self._record_path)
        return super().find(uri, req)

    def _country_taken_by(self, uri_template: str) -> str | None:
        """The country segment whose record paths ``uri_template`` may take, or None when it takes none.
        Falcon tries a segment's literals before its fields, so a literal of the record's path that the
        route lacks keeps them apart, and a literal where the record's path has a field may take it."""
        segments = uri_template.lstrip("/").split("/")
        consumes_rest = any(getattr(self.options.converters.get(name), "CONSUME_MULTIPLE_SEGMENTS", False)
                            for name in _CONVERTER.findall(uri_template))
        if len(segments) != len(self._segments) and not consumes_rest:
            return None
        for index, (ours, theirs) in enumerate(zip(self._segments, segments, strict=False)):
            if ours == theirs:
                continue
            if "{" not in ours:
                return None
            if "{" not in theirs and index == len(self._segments) - 3:
                return theirs
            break
        raise UnacceptableRouteError(
            f"{uri_template} may take paths of {self._record_path} that RecordRouter's fast path answers: "
            "teach it (growth_gevent/api/router.py)")


# Its routes are falcon's: falcon.inspect (the OpenAPI test reads the app's routes with it) walks them as falcon's.
falcon.inspect.register_router(RecordRouter)(falcon.inspect.inspect_compiled_router)
