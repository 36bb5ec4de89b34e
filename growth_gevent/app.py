"""Building the Falcon WSGI app from a store and a config."""

import re

import falcon
import ujson

from . import resources
from .metrics import Metrics
from .records import InvalidRecord
from .store import StoreUnavailable

# What a client is told to wait before retrying while the store is unreachable.
RETRY_AFTER_SECONDS = 1
_YEAR = re.compile(r"-?[0-9]{1,4000}")


def create_app(store, config):
    metrics = Metrics(store) if config.metrics else None
    app = falcon.App(media_type=falcon.MEDIA_JSON, middleware=[metrics] if metrics else [])
    app.req_options.strip_url_path_trailing_slash = True
    app.router_options.converters["year"] = YearConverter
    app.set_error_serializer(_serialize_error)
    app.add_error_handler(InvalidRecord, _invalid_record)
    app.add_error_handler(StoreUnavailable, _store_unavailable)

    app.add_route("/ping", resources.Ping())
    app.add_route("/openapi.json", resources.OpenAPI())
    if metrics:
        app.add_route("/metrics", metrics)
    app.add_route("/api/v1/growth", resources.Growth(store, config.max_body_bytes))
    app.add_route("/api/v1/growth/post/status", resources.BulkStatus(store))
    app.add_route("/api/v1/growth/size", resources.Size(store))
    app.add_route("/api/v1/growth/{country}/{indicator}", resources.Series(store))
    app.add_route("/api/v1/growth/{country}/{indicator}/{year:year}",
                  resources.Record(store, config.max_body_bytes))
    return app


class YearConverter(falcon.routing.BaseConverter):
    """A year path segment: ASCII digits with an optional minus, as in JSON (int() also takes
    ``+5``, ``1_000`` and other scripts' digits, which would make several URLs name one record)."""

    def convert(self, value):
        return int(value) if _YEAR.fullmatch(value) else None


def _invalid_record(req, resp, error, params):
    raise falcon.HTTPUnprocessableEntity(description=str(error))


def _store_unavailable(req, resp, error, params):
    raise falcon.HTTPServiceUnavailable(description="the store is unavailable, retry later",
                                        retry_after=RETRY_AFTER_SECONDS)


def _serialize_error(req, resp, error):
    """Every error is ``{"msg": ...}``, whatever the client says it accepts."""
    message = error.description or error.status.split(" ", 1)[1].lower()
    resp.content_type = falcon.MEDIA_JSON
    resp.text = ujson.dumps({"msg": message}, escape_forward_slashes=False)
