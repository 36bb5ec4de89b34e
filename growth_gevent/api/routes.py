"""The route table: every path the app answers, the resource class that answers it (its ``on_*`` responders
are the methods) and how ``create_app`` makes one from the app's parts. ``create_app`` adds them in this
order; the OpenAPI document and the README's table of endpoints are tested against it. ``/`` is no route but
a sink (``resources.root``); falcon answers OPTIONS on every route itself.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import falcon

from ..core.descriptions import COUNTRY, INDICATOR
from . import explore, resources, swagger_ui
from .export import Export
from .facets import Facets
from .resources import JOB_STATUS_PATH, RECORDS_PATH

RECORD_PATH = RECORDS_PATH + "/{country}/{indicator}/{year:year}"  # the hot path: api/router.py finds it first


class Parts(NamedTuple):
    """What create_app makes once and the resources share."""

    store: Any
    bulk_bodies: Any  # the budget of the bulk bodies held (api/body_budget.py)
    record_bodies: Any  # the budget of the PUT bodies held
    max_body_bytes: int  # GROWTH_MAX_BODY_BYTES
    bulk_parser: Any
    metrics: Any  # None when GROWTH_METRICS is off: then there is no /metrics route


class Route(NamedTuple):
    path: str  # as falcon routes it: a converter is written {year:year}
    resource: type
    make: Callable[[Parts], Any]  # the resource to route to; None: no route (/metrics turned off)
    suffix: str | None = None

    @property
    def template(self) -> str:
        """The path as OpenAPI writes it: ``{year}``, without the converter."""
        return self.path.replace(":year}", "}")

    @property
    def methods(self) -> frozenset[str]:
        """The methods its resource has responders for, as falcon maps them."""
        tail = f"_{self.suffix}" if self.suffix else ""
        return frozenset(method for method in falcon.constants.COMBINED_METHODS
                         if hasattr(self.resource, f"on_{method.lower()}{tail}"))


ROUTES = (
    Route("/ping", resources.Ping, lambda parts: resources.Ping()),
    Route("/ready", resources.Ready, lambda parts: resources.Ready(parts.store)),
    Route("/openapi.json", resources.OpenAPI, lambda parts: resources.OpenAPI()),
    Route(swagger_ui.PAGE_PATH, swagger_ui.Page, lambda parts: swagger_ui.Page()),
    Route(swagger_ui.PAGE_PATH + "/{asset}", swagger_ui.Assets, lambda parts: swagger_ui.Assets()),
    Route(explore.PAGE_PATH, explore.Page, lambda parts: explore.Page()),
    Route(explore.PAGE_PATH + "/{asset}", explore.Assets, lambda parts: explore.Assets()),
    Route("/metrics", resources.Metrics, lambda parts: parts.metrics and resources.Metrics(parts.metrics)),
    Route(RECORDS_PATH, resources.RecordCollection,
          lambda parts: resources.RecordCollection(parts.store, parts.bulk_bodies,
                                                   min(parts.max_body_bytes, parts.bulk_bodies.client_limit),
                                                   parts.bulk_parser)),
    Route(JOB_STATUS_PATH, resources.PostStatus, lambda parts: resources.PostStatus(parts.store)),
    Route(JOB_STATUS_PATH + "/{job}", resources.PostStatus, lambda parts: resources.PostStatus(parts.store), "job"),
    Route(RECORDS_PATH + "/size", resources.Size, lambda parts: resources.Size(parts.store)),
    Route(RECORDS_PATH + "/export", Export, lambda parts: Export(parts.store)),
    Route(RECORDS_PATH + "/export.{format}", Export, lambda parts: Export(parts.store), "file"),
    Route(RECORDS_PATH + "/countries", Facets,
          lambda parts: Facets(parts.store, COUNTRY, parts.record_bodies,
                               min(parts.max_body_bytes, parts.record_bodies.client_limit))),
    Route(RECORDS_PATH + "/indicators", Facets,
          lambda parts: Facets(parts.store, INDICATOR, parts.record_bodies,
                               min(parts.max_body_bytes, parts.record_bodies.client_limit))),
    Route(RECORDS_PATH + "/{country}/{indicator}", resources.Series, lambda parts: resources.Series(parts.store)),
    Route(RECORD_PATH, resources.Record,
          lambda parts: resources.Record(parts.store, parts.record_bodies,
                                         min(parts.max_body_bytes, parts.record_bodies.client_limit))),
)
