"""The HTTP resources: thin translations between requests and the store."""

import pathlib
import re
from urllib.parse import quote, urlencode

import falcon
import ujson

from ..core.records import InvalidRecord, as_record, check_name, check_year, make_key, parse_value_update
from ..http.responses import RETRY_AFTER_SECONDS
from ..stores.base import JOBS_KEPT, StoreUnavailable
from . import csv_format
from .body_reader import read_body, read_json, request_media_type
from .bulk_parser import BULK_MEDIA_TYPES
from .conditional import etag_of, send_tagged, tag_body, write_check
from .cursor import InvalidCursor, decode_cursor, encode_cursor

# The challenge's probe record: the bulk status shows its value as "test value".
PROBE_RECORD_KEY = make_key("BRZ", "NGDP_R", 2002)
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
LIST_PARAMETERS = frozenset({"country", "indicator", "year", "from", "to", "limit", "offset", "cursor", "format"})
# A page's cost grows with its offset (Redis reads past every skipped record); deeper pages follow
# "next", whose cursor costs what a first page costs.
MAX_OFFSET = 10000
SERIES_PARAMETERS = frozenset({"from", "to", "format"})
# What a page or a series can be answered as, the default first: client_prefers() picks the first of equals.
REPRESENTATIONS = (falcon.MEDIA_JSON, csv_format.MEDIA_TYPE)
FORMATS = {"json": falcon.MEDIA_JSON, "csv": csv_format.MEDIA_TYPE}
# The methods the challenge's Go reference routes on a path it does not know: it answers them 400.
ROOT_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE"})
_INTEGER = re.compile(r"-?[0-9]+")
# A bulk job's number as its status URL writes it: one URL a job.
_JOB = re.compile(r"[1-9][0-9]{0,17}")
RECORDS_PATH = "/api/v1/growth"
JOB_STATUS_PATH = RECORDS_PATH + "/post/status"


def _dumps(document):
    return ujson.dumps(document, escape_forward_slashes=False).encode()


def _json(resp, document, status=falcon.HTTP_200):
    resp.status = status
    resp.data = _dumps(document)


def _record_json(key, value):
    """One record's JSON, as _dumps writes it: its names hold no '/' (check_name), so ujson's default
    escaping gives the same bytes, without the keyword that costs ~0.7 µs a call
    (docs/performance.md#a-records-json-without-ujsons-keyword)."""
    return ujson.dumps(as_record(key, value)).encode()


class Ping:
    def on_get(self, req, resp):
        resp.content_type = falcon.MEDIA_TEXT
        resp.text = "pong"

    on_head = on_get


class Ready:
    """``/ready``: readiness, for a load balancer or a HEALTHCHECK: 200 while the store answers, 503
    saying why while it cannot be reached (Redis down, failing over), and 503 naming the cause while writes
    are refused (a snapshot or the journal failed: a disk full), though reads go on: a write sent there
    would not be kept. ``/ping`` is liveness only."""

    def __init__(self, store):
        self._store = store

    def on_get(self, req, resp):
        try:
            self._store.size()  # one round trip on Redis
        except StoreUnavailable as error:
            raise falcon.HTTPServiceUnavailable(description=f"not ready: {error}",
                                                retry_after=RETRY_AFTER_SECONDS) from None
        refused = self._store.health().writes_refused
        _json(resp, {"msg": refused or "ready"}, falcon.HTTP_200 if refused is None else falcon.HTTP_503)

    on_head = on_get


def _query(req, allowed):
    """The query parameters, each given at most once, none unknown; blank ones count as not given."""
    unknown = sorted(set(req.params) - allowed)
    if unknown:
        raise falcon.HTTPBadRequest(description=f"unknown query parameter {unknown[0]!r}; "
                                                f"known: {', '.join(sorted(allowed))}")
    params = {}
    for name, value in req.params.items():
        if type(value) is list:
            raise falcon.HTTPBadRequest(description=f"query parameter {name!r} is given more than once")
        if value:
            params[name] = value
    return params


def _integer(params, name, default=None, lowest=None, highest=None):
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


def _cursor(params, offset):
    """The key after which the page starts, from ``cursor``; None without one."""
    raw = params.get("cursor")
    if raw is None:
        return None
    if offset:
        raise falcon.HTTPBadRequest(description="cursor and offset cannot be combined: the cursor says where "
                                                "the page starts")
    try:
        return decode_cursor(raw)
    except InvalidCursor:
        raise falcon.HTTPBadRequest(description='cursor is not one this service gave; pass a page\'s "next" '
                                                'as it is') from None


def _year_range(params, year=None):
    """``from``/``to`` (inclusive), narrowed to ``year`` when one is given."""
    first, last = _integer(params, "from"), _integer(params, "to")
    if year is not None:
        first = year if first is None else max(first, year)
        last = year if last is None else min(last, year)
    return first, last


def root(req, resp, **params):
    """``/``, which is no route of the API: the challenge's own harness wants the Go reference's answer,
    ``400 {"msg":"error in path"}`` (HEAD too, without the body). The reference answers other methods 404; a
    POST there it would take as a bulk load, which is only ever meant for ``/api/v1/growth``."""
    if req.method in ROOT_METHODS:
        raise falcon.HTTPBadRequest(description="error in path")
    raise falcon.HTTPNotFound()


def _wants_csv(req, params):
    """Whether to answer CSV: ``format=csv``, or an Accept header that prefers text/csv to JSON (q-values
    weighed, as RFC 9110 says). Either way the answer varies with Accept."""
    chosen = params.get("format")
    if chosen is not None:
        if chosen not in FORMATS:
            raise falcon.HTTPBadRequest(description="format must be csv or json")
        return FORMATS[chosen] == csv_format.MEDIA_TYPE
    # Parsing Accept costs more than the hot GET can spare: only one that names a text type can prefer CSV.
    return "text/" in req.accept and req.client_prefers(REPRESENTATIONS) == csv_format.MEDIA_TYPE


def _csv(resp, records):
    resp.content_type = csv_format.CONTENT_TYPE
    resp.data = csv_format.write(records)


class OpenAPI:
    """``GET /openapi.json``: the API's own description, kept in the repository beside this file."""

    def __init__(self):
        self._document = (pathlib.Path(__file__).parent / "openapi.json").read_bytes()
        self._etag = etag_of(self._document)

    def on_get(self, req, resp):
        resp.data = self._document
        send_tagged(req, resp, self._etag)

    on_head = on_get


class RecordCollection:
    """``/api/v1/growth``: POST a bulk load (validated whole, applied in the background); GET a page."""

    def __init__(self, store, bodies, max_body_bytes, bulk_parser):
        self._store = store
        self._bodies = bodies
        self._max_body_bytes = max_body_bytes
        self._bulk_parser = bulk_parser

    def on_get(self, req, resp):
        params = _query(req, LIST_PARAMETERS)
        limit = _integer(params, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        offset = _integer(params, "offset", 0, 0)
        if offset > MAX_OFFSET:
            raise falcon.HTTPBadRequest(description=f'offset is at most {MAX_OFFSET}; follow "next" to page further')
        after = _cursor(params, offset)
        first, last = _year_range(params, _integer(params, "year"))
        as_csv = _wants_csv(req, params)
        country, indicator = params.get("country"), params.get("indicator")
        # One record more than the page tells whether there is a next one.
        total, page = self._store.records(country and country.upper(), indicator and indicator.upper(),
                                          first, last, offset, limit + 1, after)
        resp.vary = ("Accept",)
        # The total, where a CSV page has no room for it (GitHub's and PostgREST's header).
        resp.set_header("X-Total-Count", str(total))
        next_page = None
        if len(page) > limit:
            page = page[:limit]
            query = {name: value for name, value in params.items() if name not in ("offset", "cursor")}
            next_page = f"{req.path}?{urlencode({**query, 'limit': limit, 'cursor': encode_cursor(page[-1][0])})}"
            # For the CSV answer too, which has no room for it in its body (RFC 8288).
            resp.append_link(next_page, "next")
        if as_csv:
            _csv(resp, page)
            tag_body(req, resp, f"{total} {next_page}".encode())  # what a CSV page says in headers only
            return
        _json(resp, {"items": [as_record(key, value) for key, value in page],
                     "total": total, "limit": limit, "offset": offset, "next": next_page})
        tag_body(req, resp)

    on_head = on_get

    def on_post(self, req, resp):
        # The body is held only as an argument: when parse() returns, it and the parse are gone, and
        # only then is the charge given back.
        media_type = request_media_type(req, BULK_MEDIA_TYPES)
        with self._bodies.reserve(req.remote_addr) as charge:
            records = self._bulk_parser.parse(read_body(req, self._max_body_bytes, charge),
                                              self._store.check_bulk_room, media_type)
        job = self._store.submit_bulk(records)
        # The body stays the challenge's; the job's own status is where Location points.
        resp.location = f"{JOB_STATUS_PATH}/{job}"
        _json(resp, {"msg": "In progress"}, falcon.HTTP_202)


class PostStatus:
    """``/api/v1/growth/post/status``: where bulk loading stands (the store's BulkStatus), with the
    probe record's value; ``/api/v1/growth/post/status/{job}`` (suffix ``job``): one job's own status, for
    the last JOBS_KEPT jobs accepted."""

    def __init__(self, store):
        self._store = store

    def on_get(self, req, resp):
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
            document.update(snapshots)
        _json(resp, document)

    on_head = on_get

    def on_get_job(self, req, resp, job):
        status = self._store.job_status(int(job)) if _JOB.fullmatch(job) else None
        if status is None:
            raise falcon.HTTPNotFound(description=f"no bulk job {job[:20]!r} is known: a job's URL is the Location "
                                                  f"its POST answered, and the last {JOBS_KEPT} jobs are kept")
        _json(resp, {"msg": status.state, "count": status.applied, "total": status.total})

    on_head_job = on_get_job


class Size:
    def __init__(self, store):
        self._store = store

    def on_get(self, req, resp):
        _json(resp, {"size": self._store.size()})

    on_head = on_get


class Series:
    """``/api/v1/growth/{country}/{indicator}``: one series, by year."""

    def __init__(self, store):
        self._store = store

    def on_get(self, req, resp, country, indicator):
        params = _query(req, SERIES_PARAMETERS)
        first, last = _year_range(params)
        as_csv = _wants_csv(req, params)
        country, indicator = country.upper(), indicator.upper()
        values = self._store.series(country, indicator, first, last)
        resp.vary = ("Accept",)
        if not values:
            raise falcon.HTTPNotFound()
        if as_csv:
            _csv(resp, [((country, indicator, year), value) for year, value in values])
        else:
            _json(resp, {"Country": country, "Indicator": indicator,
                         "Values": [{"Year": year, "Value": value} for year, value in values]})
        tag_body(req, resp)

    on_head = on_get


class Record:
    """``/api/v1/growth/{country}/{indicator}/{year}``: one record."""

    def __init__(self, store, bodies, max_body_bytes):
        self._store = store
        self._bodies = bodies
        self._max_body_bytes = max_body_bytes

    def on_get(self, req, resp, country, indicator, year):
        key = make_key(country, indicator, year)
        value = self._store.get(key)
        if value is None:
            raise falcon.HTTPNotFound()
        resp.data = _record_json(key, value)
        tag_body(req, resp)

    on_head = on_get

    def on_put(self, req, resp, country, indicator, year):
        """Takes the record as GET returns it, or its value alone; If-Match and If-None-Match are judged on
        the record's current ETag in the same step as the write (optimistic concurrency)."""
        problem = check_name("Country", country) or check_name("Indicator", indicator) or check_year(year)
        if problem:
            raise InvalidRecord(problem)
        key = make_key(country, indicator, year)
        with self._bodies.reserve(req.remote_addr) as charge:
            value = parse_value_update(read_json(req, self._max_body_bytes, charge), key)
        created = self._store.put(key, value, write_check(req, lambda current: _record_etag(key, current)))
        resp.status = falcon.HTTP_201 if created else falcon.HTTP_200
        resp.data = _record_json(key, value)
        resp.etag = etag_of(resp.data)  # what a GET of it now answers
        if created:
            resp.location = record_path(key)

    def on_delete(self, req, resp, country, indicator, year):
        key = make_key(country, indicator, year)
        if not self._store.delete(key, write_check(req, lambda current: _record_etag(key, current), needs_record=True)):
            raise falcon.HTTPNotFound()
        resp.status = falcon.HTTP_204


def record_path(key):
    """The canonical URL path of a record: its upper-case names percent-encoded."""
    country, indicator, year = key
    return f"{RECORDS_PATH}/{quote(country, safe='')}/{quote(indicator, safe='')}/{year}"


def _record_etag(key, value):
    """The ETag of the record's representation, as its GET sends it."""
    return etag_of(_record_json(key, value))
