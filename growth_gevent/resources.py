"""The HTTP resources: thin translations between requests and the store."""

import falcon
import gevent
import ujson

from .body import gc_paused, parse_json, read_body, read_json
from .records import as_record, check_name, make_key, parse_records, parse_value_update, InvalidRecord

TEST_KEY = make_key("BRZ", "NGDP_R", 2002)


def _json(resp, document, status=falcon.HTTP_200):
    resp.status = status
    resp.data = ujson.dumps(document, escape_forward_slashes=False).encode()


class Ping:
    def on_get(self, req, resp):
        resp.content_type = falcon.MEDIA_TEXT
        resp.text = "pong"

    on_head = on_get


class Growth:
    """``POST /api/v1/growth``: validate the whole payload, accept it, apply it in the background."""

    def __init__(self, store, max_body_bytes):
        self._store = store
        self._max_body_bytes = max_body_bytes

    def on_post(self, req, resp):
        body = read_body(req, self._max_body_bytes)
        with gc_paused():
            records = parse_records(parse_json(body), pause=gevent.sleep)
        self._store.submit_bulk(records)
        _json(resp, {"msg": "In progress"}, falcon.HTTP_202)


class BulkStatus:
    def __init__(self, store):
        self._store = store

    def on_get(self, req, resp):
        status = self._store.bulk_status()
        _json(resp, {
            "msg": status.state,
            "test value": self._store.get(TEST_KEY),
            "count": status.applied,
            "total": status.total,
            "jobs accepted": status.jobs_accepted,
            "jobs applied": status.jobs_applied,
        })

    on_head = on_get


class Size:
    def __init__(self, store):
        self._store = store

    def on_get(self, req, resp):
        _json(resp, {"size": self._store.size()})

    on_head = on_get


class Record:
    """``/api/v1/growth/{country}/{indicator}/{year}``: one record."""

    def __init__(self, store, max_body_bytes):
        self._store = store
        self._max_body_bytes = max_body_bytes

    def on_get(self, req, resp, country, indicator, year):
        key = make_key(country, indicator, year)
        value = self._store.get(key)
        if value is None:
            raise falcon.HTTPNotFound()
        _json(resp, as_record(key, value))

    on_head = on_get

    def on_put(self, req, resp, country, indicator, year):
        problem = check_name("Country", country) or check_name("Indicator", indicator)
        if problem:
            raise InvalidRecord(problem)
        value = parse_value_update(read_json(req, self._max_body_bytes))
        key = make_key(country, indicator, year)
        created = self._store.put(key, value)
        _json(resp, as_record(key, value), falcon.HTTP_201 if created else falcon.HTTP_200)

    def on_delete(self, req, resp, country, indicator, year):
        if not self._store.delete(make_key(country, indicator, year)):
            raise falcon.HTTPNotFound()
        resp.status = falcon.HTTP_204
