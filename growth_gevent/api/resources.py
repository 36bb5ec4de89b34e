"""The HTTP resources: thin translations between requests and the store."""

import pathlib
import re
from typing import Any, NoReturn
from urllib.parse import quote, urlencode

import falcon

from ..core.records import Key, as_record, key_to_write, make_key
from ..http.responses import RETRY_AFTER_SECONDS
from ..ops import metrics as ops_metrics
from ..stores.base import JOBS_KEPT, Store, StoreUnavailable
from . import params
from .body_budget import BodyBudget
from .body_reader import read_body, read_value_update, request_media_type
from .bulk_parser import BULK_MEDIA_TYPES, BulkParser
from .conditional import write_check
from .cursor import encode_cursor
from .representation import CSV, JSON, RecordBodies, etag_of, negotiate, send_csv, send_json, send_tagged, tag_body

# The challenge's probe record: the bulk status shows its value as "test value".
PROBE_RECORD_KEY = make_key("BRZ", "NGDP_R", 2002)
# What a page or a series can be answered as, the default first.
REPRESENTATIONS = (JSON, CSV)
# The methods the challenge's Go reference routes on a path it does not know: it answers them 400.
ROOT_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE"})
# A bulk job's number as its status URL writes it: one URL a job.
_JOB = re.compile(r"[1-9][0-9]{0,17}")
RECORDS_PATH = "/api/v1/growth"
JOB_STATUS_PATH = RECORDS_PATH + "/post/status"


class Ping:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        params.none(req)
        resp.content_type = falcon.MEDIA_TEXT
        resp.text = "pong"

    on_head = on_get


class Ready:
    """``/ready``: readiness, for a load balancer or a HEALTHCHECK: 200 while the store answers, 503
    saying why while it cannot be reached (Redis down, failing over), and 503 naming the cause while writes
    are refused (a snapshot or the journal failed: a disk full), though reads go on: a write sent there
    would not be kept. ``/ping`` is liveness only."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        params.none(req)
        try:
            self._store.size()  # one round trip on Redis
        except StoreUnavailable as error:
            raise falcon.HTTPServiceUnavailable(description=f"not ready: {error}",
                                                retry_after=RETRY_AFTER_SECONDS) from None
        refused = self._store.health().writes_refused
        send_json(resp, {"msg": refused or "ready"}, falcon.HTTP_200 if refused is None else falcon.HTTP_503)

    on_head = on_get


class Metrics:
    """``/metrics``: the scrape of ``ops.metrics.Metrics``, under the query rule of every route."""

    def __init__(self, metrics: ops_metrics.Metrics) -> None:
        self._metrics = metrics

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        params.none(req)
        self._metrics.on_get(req, resp)

    on_head = on_get


def root(req: falcon.Request, resp: falcon.Response, **fields: Any) -> NoReturn:
    """``/``, which is no route of the API: the challenge's own harness wants the Go reference's answer,
    ``400 {"msg":"error in path"}`` (HEAD too, without the body). The reference answers other methods 404; a
    POST there it would take as a bulk load, which is only ever meant for ``/api/v1/growth``."""
    if req.method in ROOT_METHODS:
        raise falcon.HTTPBadRequest(description="error in path")
    raise falcon.HTTPNotFound()


class OpenAPI:
    """``GET /openapi.json``: the API's own description, kept in the repository beside this file."""

    def __init__(self) -> None:
        self._document = (pathlib.Path(__file__).parent / "openapi.json").read_bytes()
        self._etag = etag_of(self._document)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        params.none(req)
        resp.data = self._document
        send_tagged(req, resp, self._etag)

    on_head = on_get


class RecordCollection:
    """``/api/v1/growth``: POST a bulk load (validated whole, applied in the background); GET a page."""

    def __init__(self, store: Store, bodies: BodyBudget, max_body_bytes: int, bulk_parser: BulkParser) -> None:
        self._store = store
        self._bodies = bodies
        self._max_body_bytes = max_body_bytes
        self._bulk_parser = bulk_parser

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        given = params.query(req, params.LIST)
        limit, offset, after = params.paging(given)
        country, indicator, first, last = params.filters(given)
        media_type = negotiate(req, given, REPRESENTATIONS)
        # One record more than the page tells whether there is a next one.
        total, page = self._store.records(country, indicator, first, last, offset, limit + 1, after)
        resp.vary = ("Accept",)
        # The total, where a CSV page has no room for it (GitHub's and PostgREST's header).
        resp.set_header("X-Total-Count", str(total))
        next_page = None
        if len(page) > limit:
            page = page[:limit]
            query = {name: value for name, value in given.items() if name not in ("offset", "cursor")}
            next_page = f"{req.path}?{urlencode({**query, 'limit': limit, 'cursor': encode_cursor(page[-1][0])})}"
            # For the CSV answer too, which has no room for it in its body (RFC 8288).
            resp.append_link(next_page, "next")
        # Where every row is, beside the next page: a CSV page read as a file (pandas) is one page only.
        resp.append_link(export_path(given, media_type), "collection", type_hint=media_type)
        if media_type == CSV:
            send_csv(resp, page)
            tag_body(req, resp, f"{total} {next_page}".encode())  # what a CSV page says in headers only
            return
        send_json(resp, {"items": [as_record(key, value) for key, value in page],
                         "total": total, "limit": limit, "offset": offset, "next": next_page})
        tag_body(req, resp)

    on_head = on_get

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        # The body is held only as an argument: when parse() returns, it and the parse are gone, and
        # only then is the charge given back.
        params.none(req)
        media_type = request_media_type(req, BULK_MEDIA_TYPES)
        with self._bodies.reserve(req.remote_addr) as charge:
            records = self._bulk_parser.parse(read_body(req, self._max_body_bytes, charge),
                                              self._store.check_bulk_room, media_type)
        job = self._store.submit_bulk(records)
        # The body stays the challenge's; the job's own status is where Location points.
        resp.location = f"{JOB_STATUS_PATH}/{job}"
        send_json(resp, {"msg": "In progress"}, falcon.HTTP_202)


class PostStatus:
    """``/api/v1/growth/post/status``: where bulk loading stands (the store's BulkStatus), with the
    probe record's value; ``/api/v1/growth/post/status/{job}`` (suffix ``job``): one job's own status, for
    the last JOBS_KEPT jobs accepted."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        params.none(req)
        status = self._store.bulk_status()
        document = {
            "msg": status.state,
            "test value": self._store.get(PROBE_RECORD_KEY),
            "count": status.applied,
            "total": status.total,
            "jobs accepted": status.jobs_accepted,
            "jobs applied": status.jobs_applied,
        }
        snapshots = self._store.health().snapshots
        if snapshots is not None:
            document.update({"last snapshot": snapshots.last_success, "snapshot error": snapshots.error})
        send_json(resp, document)

    on_head = on_get

    def on_get_job(self, req: falcon.Request, resp: falcon.Response, job: str) -> None:
        params.none(req)
        status = self._store.job_status(int(job)) if _JOB.fullmatch(job) else None
        if status is None:
            raise falcon.HTTPNotFound(description=f"no bulk job {job[:20]!r} is known: a job's URL is the Location "
                                                  f"its POST answered, and the last {JOBS_KEPT} jobs are kept")
        send_json(resp, {"msg": status.state, "count": status.applied, "total": status.total})

    on_head_job = on_get_job


class Size:
    def __init__(self, store: Store) -> None:
        self._store = store

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        params.none(req)
        send_json(resp, {"size": self._store.size()})

    on_head = on_get


class Series:
    """``/api/v1/growth/{country}/{indicator}``: one series, by year."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def on_get(self, req: falcon.Request, resp: falcon.Response, country: str, indicator: str) -> None:
        given = params.query(req, params.SERIES)
        first, last = params.year_range(given)
        media_type = negotiate(req, given, REPRESENTATIONS)
        country, indicator = country.upper(), indicator.upper()
        values = self._store.series(country, indicator, first, last)
        resp.vary = ("Accept",)
        if not values:
            raise falcon.HTTPNotFound()
        if media_type == CSV:
            send_csv(resp, [((country, indicator, year), value) for year, value in values])
        else:
            send_json(resp, {"Country": country, "Indicator": indicator,
                             "Values": [{"Year": year, "Value": value} for year, value in values]})
        tag_body(req, resp)

    on_head = on_get


class Record:
    """``/api/v1/growth/{country}/{indicator}/{year}``: one record."""

    def __init__(self, store: Store, bodies: BodyBudget, max_body_bytes: int) -> None:
        self._store = store
        self._bodies = bodies
        self._max_body_bytes = max_body_bytes
        self._records = RecordBodies()
        self._tag = self._records.tag

    def on_get(self, req: falcon.Request, resp: falcon.Response, country: str, indicator: str, year: int) -> None:
        if req.query_string:  # none()'s test, without its call on the hot GET
            params.none(req)
        key = make_key(country, indicator, year)
        value = self._store.get(key)
        if value is None:
            raise falcon.HTTPNotFound()
        resp.data, etag = self._records.of(key, value)
        send_tagged(req, resp, etag)

    on_head = on_get

    def on_put(self, req: falcon.Request, resp: falcon.Response, country: str, indicator: str, year: int) -> None:
        """Takes the record as GET returns it, or its value alone; If-Match and If-None-Match are judged on
        the record's current ETag in the same step as the write (optimistic concurrency)."""
        if req.query_string:  # none()'s test, without its call
            params.none(req)
        key = key_to_write(country, indicator, year)
        value = read_value_update(req, self._max_body_bytes, self._bodies, key)
        created = self._store.put(key, value, write_check(req, key, self._tag))
        resp.data, etag = self._records.made(key, value)
        resp._headers["etag"] = f'"{etag}"'  # the ETag a GET of it now answers; set_header's checks cost a call more
        if created:  # else the response's own 200
            resp.status = falcon.HTTP_201
            resp.location = record_path(key)

    def on_delete(self, req: falcon.Request, resp: falcon.Response, country: str, indicator: str, year: int) -> None:
        params.none(req)
        key = make_key(country, indicator, year)
        if not self._store.delete(key, write_check(req, key, self._tag, needs_record=True)):
            raise falcon.HTTPNotFound()
        resp.status = falcon.HTTP_204


def export_path(given: dict[str, str], media_type: str) -> str:
    """The export file of the list's filters in ``given``, as ``media_type``: every row of its pages."""
    filters = urlencode({name: value for name, value in given.items() if name in params.FILTERS})
    return f"{RECORDS_PATH}/export.{'csv' if media_type == CSV else 'json'}" + (f"?{filters}" if filters else "")


def record_path(key: Key) -> str:
    """The canonical URL path of a record: its upper-case names percent-encoded."""
    country, indicator, year = key
    return f"{RECORDS_PATH}/{quote(country, safe='')}/{quote(indicator, safe='')}/{year}"
