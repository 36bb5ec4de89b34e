"""``GET /api/v1/growth/countries`` and ``/api/v1/growth/indicators``: the names that have records, each
with its count and year range (``Store.facets``), each list filtered by the other name."""

import falcon

from ..stores.base import COUNTRY, INDICATOR, Store
from . import params
from .representation import send_json, tag_body

# The field that names each item, as a record names it; the others are ``records``, ``from`` and ``to``
# (the list's own parameters, so that an item's range can be passed back as they are).
FIELDS = {COUNTRY: "Country", INDICATOR: "Indicator"}


class Facets:
    """The facet ``by`` (COUNTRY or INDICATOR), filtered by the other one's query parameter."""

    def __init__(self, store: Store, by: str) -> None:
        self._store = store
        self._by = by
        self._field = FIELDS[by]
        self._filter = INDICATOR if by == COUNTRY else COUNTRY

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        given = params.query(req, frozenset({self._filter}))
        name = given.get(self._filter)
        name = name and name.upper()
        facets = self._store.facets(self._by, **{self._filter: name})
        send_json(resp, {"items": [{self._field: name, "records": records, "from": first, "to": last}
                                   for name, records, first, last in facets]})
        tag_body(req, resp)

    on_head = on_get
