"""``GET /api/v1/growth/countries`` and ``/api/v1/growth/indicators``: the names that have records, each
with its count and year range (``Store.facets``) and its description where known (``name``; an indicator's
``units`` and ``scale`` too), each list filtered by the other name. ``PATCH`` on the same paths sets the
descriptions, a JSON merge patch (RFC 7396) of ``{code: {field: text or null} or null}`` (core/descriptions.py)."""

import falcon

from ..core.descriptions import COUNTRY, INDICATOR, parse_patch
from ..core.descriptions import FIELDS as DESCRIBED
from ..stores.base import Store
from . import params
from .body_budget import BodyBudget
from .body_reader import read_body, request_media_type
from .representation import send_json, tag_body
from .strict_json import parse_json

# The field that names each item, as a record names it; the others are ``records``, ``from`` and ``to``
# (the list's own parameters, so that an item's range can be passed back as they are).
FIELDS = {COUNTRY: "Country", INDICATOR: "Indicator"}
MERGE_PATCH = "application/merge-patch+json"
# A patch of MAX_PATCH_CODES codes described at length.
MAX_PATCH_BODY_BYTES = 1 << 20


class Facets:
    """The facet ``by`` (COUNTRY or INDICATOR), filtered by the other one's query parameter."""

    def __init__(self, store: Store, by: str, bodies: BodyBudget, max_body_bytes: int) -> None:
        self._store = store
        self._by = by
        self._field = FIELDS[by]
        self._filter = INDICATOR if by == COUNTRY else COUNTRY
        self._bodies = bodies
        self._max_body_bytes = min(max_body_bytes, MAX_PATCH_BODY_BYTES)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        given = params.query(req, frozenset({self._filter}))
        name = given.get(self._filter)
        name = name and name.upper()
        facets = self._store.facets(self._by, **{self._filter: name})
        described = self._store.descriptions(self._by)
        fields = DESCRIBED[self._by]
        items = []
        for code, records, first, last in facets:
            description = described.get(code)
            item = {self._field: code}
            if description:  # in a fixed order, whatever the store's
                item.update((field, description[field]) for field in fields if field in description)
            items.append({**item, "records": records, "from": first, "to": last})
        send_json(resp, {"items": items})
        tag_body(req, resp)

    on_head = on_get

    def on_patch(self, req: falcon.Request, resp: falcon.Response) -> None:
        params.none(req)
        request_media_type(req, (falcon.MEDIA_JSON, MERGE_PATCH))
        with self._bodies.reserve(req.remote_addr) as charge:
            document = parse_json(read_body(req, self._max_body_bytes, charge), unique_keys=True)
        self._store.describe(self._by, parse_patch(self._by, document))
        resp.status = falcon.HTTP_204
