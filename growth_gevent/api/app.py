"""Building the Falcon WSGI app from a store and a config."""

import math
import re
from collections.abc import Callable
from time import perf_counter
from typing import Any, NoReturn, Protocol

import falcon

from ..core.descriptions import TooMany
from ..core.records import InvalidRecord
from ..http.responses import RETRY_AFTER_SECONDS, message_body
from ..ops.metrics import Metrics
from ..stores.base import BulkQueueFull, Store, StoreFull, StoreUnavailable, WritesRefused
from . import resources
from .auth import RequireToken, TokenSettings, configured_tokens
from .body_budget import split_budgets
from .bulk_parser import BulkParser
from .compression import Gzip
from .cors import CORS
from .router import RecordRouter
from .routes import RECORD_PATH, ROUTES, Parts


class Settings(TokenSettings, Protocol):
    """What the app reads of the configuration (``growth_gevent.config.Config``, which this layer may not
    import)."""

    @property
    def metrics(self) -> bool: ...
    @property
    def cors_origins(self) -> tuple[str, ...] | None: ...
    @property
    def snapshot_interval(self) -> float: ...
    @property
    def body_buffer_bytes(self) -> int: ...
    @property
    def body_buffer_client_percent(self) -> int: ...
    @property
    def max_body_bytes(self) -> int: ...
    @property
    def bulk_max_records(self) -> int: ...
    @property
    def bulk_queue_records(self) -> int: ...
    @property
    def max_records(self) -> int: ...


def create_app(store: Store, config: Settings) -> falcon.App:
    metrics = Metrics(store) if config.metrics else None
    tokens = configured_tokens(config)
    cors = CORS(config.cors_origins) if config.cors_origins else None
    guard = RequireToken(tokens) if tokens else None
    # Listed last, gzip sees each answer first: the time it takes counts in the metrics.
    app = falcon.App(media_type=falcon.MEDIA_JSON, router=RecordRouter(RECORD_PATH),
                     middleware=[each for each in (metrics, cors, guard, Gzip()) if each], response_type=Response)
    app.req_options.strip_url_path_trailing_slash = True
    app.set_error_serializer(_serialize_error)
    app.add_error_handler(InvalidRecord, _invalid_record)
    app.add_error_handler(StoreUnavailable, _store_unavailable)
    app.add_error_handler(BulkQueueFull, _bulk_queue_full)
    app.add_error_handler(StoreFull, _store_full)
    app.add_error_handler(TooMany, _too_many_described)
    # The snapshotter tries again every interval: no sooner can writes be accepted again.
    app.add_error_handler(WritesRefused, _writes_refused(math.ceil(config.snapshot_interval)))

    # A body larger than what one client may hold could never be held, a bulk load larger than the whole
    # queue never accepted: both are too large, not "retry later".
    bulk_bodies, record_bodies = split_budgets(config.body_buffer_bytes, config.body_buffer_client_percent)
    parts = Parts(store, bulk_bodies, record_bodies, config.max_body_bytes,
                  BulkParser(min(config.bulk_max_records, config.bulk_queue_records, config.max_records)), metrics)

    # A sink sees every method; \Z, since "$" would also match "/\n" (a path of "/%0A").
    app.add_sink(resources.root, prefix=re.compile(r"/\Z"))
    # The API's routes first: falcon's compiled router tries a path's segments against the routes' in the order
    # they were added, and a series or a query then skips the six other first segments (a record's path, the
    # hot path, is found before falcon's router is asked: router.py).
    for route in sorted(ROUTES, key=lambda route: not route.path.startswith(resources.RECORDS_PATH)):
        resource = route.make(parts)
        if resource is not None:
            app.add_route(route.path, resource, suffix=route.suffix)
    return app


class Response(falcon.Response):
    """Every answer, errors included, says ``nosniff``: a browser must not take a body (a CSV page, an error
    quoting a name) for another type than the one it is sent as. Set as the response is made, the one
    place every answer passes, falcon's own errors too (a middleware would cost a call per request); and there
    the request's time starts, for the metrics (``started``)."""

    __slots__ = ("started",)  # falcon's response has slots: an attribute of no slot would make a dict a request

    def __init__(self, options: falcon.ResponseOptions | None = None) -> None:
        self.started = perf_counter()
        super().__init__(options)
        # set_header's own work (str(), lower(), the Set-Cookie test) on a name and value known here: a call less.
        self._headers["x-content-type-options"] = "nosniff"


def _invalid_record(req: falcon.Request, resp: falcon.Response,
                    error: InvalidRecord, params: dict[str, Any]) -> NoReturn:
    raise falcon.HTTPUnprocessableEntity(description=str(error))


def _store_unavailable(req: falcon.Request, resp: falcon.Response,
                       error: StoreUnavailable, params: dict[str, Any]) -> NoReturn:
    # A store may say more, for the client: what a failed write may still have done.
    description = getattr(error, "client_message", "the store is unavailable, retry later")
    raise falcon.HTTPServiceUnavailable(description=description, retry_after=RETRY_AFTER_SECONDS)


def _bulk_queue_full(req: falcon.Request, resp: falcon.Response,
                     error: BulkQueueFull, params: dict[str, Any]) -> NoReturn:
    raise falcon.HTTPServiceUnavailable(description=f"{error}; retry later", retry_after=RETRY_AFTER_SECONDS)


def _store_full(req: falcon.Request, resp: falcon.Response, error: StoreFull, params: dict[str, Any]) -> NoReturn:
    # Not "retry later": the store stays full until records are deleted (Redis's maxmemory is a 503,
    # since Redis may free memory by itself).
    raise falcon.HTTPInsufficientStorage(description=f"{error}; replacing a stored record still works")


def _too_many_described(req: falcon.Request, resp: falcon.Response, error: TooMany, params: dict[str, Any]) -> NoReturn:
    raise falcon.HTTPInsufficientStorage(description=f"{error}; remove some first (null)")


def _writes_refused(retry_after: int
                    ) -> Callable[[falcon.Request, falcon.Response, WritesRefused, dict[str, Any]], NoReturn]:
    def handle(req: falcon.Request, resp: falcon.Response, error: WritesRefused, params: dict[str, Any]) -> NoReturn:
        raise falcon.HTTPServiceUnavailable(description=str(error), retry_after=retry_after)
    return handle


def _serialize_error(req: falcon.Request, resp: falcon.Response, error: falcon.HTTPError) -> None:
    """Every error is ``{"msg": ...}``, whatever the client says it accepts."""
    message = error.description or falcon.code_to_http_status(error.status).split(" ", 1)[1].lower()
    resp.content_type = falcon.MEDIA_JSON
    resp.data = message_body(message)
