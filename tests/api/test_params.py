"""One rule for query parameters on every route of the table (api/params.py, docs/api.md): an unknown name is a
400 that says so, a name beginning with ``_`` (jQuery's cache buster) is ignored, and ``format`` is honoured
where a route offers formats and a 400 anywhere else."""

import json

import pytest

from growth_gevent.api import explore, swagger_ui
from growth_gevent.api.routes import ROUTES
from growth_gevent.config import Config
from tests.helpers.shared_app import SharedApp
from tests.helpers.support import SAMPLE, memory_store

# A concrete path of each route, for a record that exists; the job is one that does not (404 either way).
EXAMPLES = {"{asset}": "swagger-ui.css", "{job}": "7", "{format}": "csv",
            "{country}": "BRZ", "{indicator}": "NGDP_R", "{year}": "2002"}
# A body for the methods that take one, that the route accepts.
BODIES = {"PUT": b'{"value": 1.5}', "POST": b"[]"}


def example(template):
    for field, value in EXAMPLES.items():
        template = template.replace(field, value)
    return template


# The HTML pages take any query: it is their script's state (the explore page's choices), not the server's.
PAGES = (swagger_ui.PAGE_PATH, explore.PAGE_PATH)
OPERATIONS = [pytest.param(method, example(route.template), id=f"{method} {route.template}")
              for route in ROUTES if route.path not in PAGES for method in sorted(route.methods)]


@pytest.fixture(scope="module")
def shared():
    return SharedApp(Config())


@pytest.fixture
def client(shared):
    """The app on a fresh store holding data/sample.json."""
    store = memory_store()
    store.submit_bulk([((r["Country"], r["Indicator"], r["Year"]), r["Value"]) for r in json.loads(SAMPLE.read_text())])
    assert store.wait_idle(10)
    with shared.client(store) as client:
        yield client
    store.close()


def ask(client, method, path):
    body = BODIES.get(method)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    return client.request(path, method=method, body=body or b"", headers=headers, expect_errors=True)


@pytest.mark.parametrize("method, path", OPERATIONS)
def test_an_unknown_parameter_is_a_400_on_every_route(client, method, path):
    response = ask(client, method, path + "?colour=blue")
    assert response.status_int == 400, response.body
    if method != "HEAD":
        assert response.json["msg"].startswith("unknown query parameter 'colour'; ")


@pytest.mark.parametrize("method, path", OPERATIONS)
def test_a_cache_buster_is_ignored_on_every_route(client, method, path):
    busted = ask(client, method, path + "?_=1700000000000")
    if method in BODIES or method == "DELETE":  # a write: the same status as the same write without it
        assert busted.status_int < 400 or busted.status_int == 404, busted.body
        return
    plain = ask(client, method, path)
    assert (busted.status_int, busted.content_type) == (plain.status_int, plain.content_type)
    if path != "/metrics":  # the scrape counts the requests themselves
        assert busted.body == plain.body


@pytest.mark.parametrize("path", ["/api/v1/growth/BRZ/NGDP_R/2002", "/api/v1/growth/size",
                                  "/api/v1/growth/post/status", "/api/v1/growth/countries", "/ready"])
@pytest.mark.parametrize("chosen", ["csv", "json"])
def test_format_where_no_format_is_offered_is_a_400(client, path, chosen):
    response = client.get(f"{path}?format={chosen}", status=400)
    assert response.json["msg"].startswith("unknown query parameter 'format'; ")


@pytest.mark.parametrize("path, formats", [
    ("/api/v1/growth", "csv or json"), ("/api/v1/growth/BRZ/NGDP_R", "csv or json"),
    ("/api/v1/growth/export", "csv, json or ndjson")])
def test_format_is_honoured_where_offered_and_else_a_400(client, path, formats):
    assert client.get(f"{path}?format=csv").content_type == "text/csv"
    assert client.get(f"{path}?format=json").content_type == "application/json"
    assert client.get(f"{path}?format=xml", status=400).json == {"msg": f"format must be {formats}"}


@pytest.mark.parametrize("page", PAGES)
def test_a_page_is_the_same_whatever_its_query(client, page):
    assert client.get(f"{page}?colour=blue&format=csv").body == client.get(page).body


def test_a_cache_buster_given_twice_is_still_ignored(client):
    assert client.get("/api/v1/growth?_=1&_=2&limit=1").json["limit"] == 1


def test_accept_weighs_json_below_a_wildcard(client):
    """The q-values are weighed whatever the Accept header looks like (RFC 9110 §12.5.1)."""
    response = client.get("/api/v1/growth/BRZ/NGDP_R", headers={"Accept": "application/json;q=0.5, */*"})
    assert response.content_type == "text/csv"


def test_options_answers_whatever_the_query(client):
    """A CORS preflight carries the query of the request it asks about: that request's 400 is the one to read."""
    assert client.options("/api/v1/growth/size?colour=blue").status_int == 200
