"""The app's router: a record's path found before falcon's compiled router is asked, every path answered as
falcon's router answers it."""

import random
import re

import falcon
import pytest
from falcon.routing import CompiledRouter
from falcon.routing.compiled import UnacceptableRouteError

from growth_gevent.api import resources
from growth_gevent.api.app import create_app
from growth_gevent.api.router import RecordRouter
from growth_gevent.api.routes import RECORD_PATH, ROUTES
from growth_gevent.config import Config
from tests.helpers.support import memory_store

PREFIX = resources.RECORDS_PATH
SEGMENTS = ["", "api", "v1", "growth", "post", "status", "Post", "size", "export", "export.csv", "export.",
            "countries", "indicators", "docs", "explore", "ping", "metrics", "openapi.json", "BRZ", "NGDP_R",
            "0", "5", "2002", "-5", "-0", "+5", "00", "0001", "1_000", "1e3", " 5", "5 ", "5\n", "\u0663",
            "\uff15", "a%2Fb", "%20", "\u00e9", "{}", "x y", "1" + "0" * 3999, "1" + "0" * 4000]


@pytest.fixture(scope="module")
def router():
    store = memory_store()
    yield create_app(store, Config(metrics=True))._router
    store.close()


def route_paths():
    """Every route of the table, its fields filled with names, years and the literals beside them."""
    for route in ROUTES:
        for value in ("BRZ", "2002", "post", "status", "export.csv", "-0", ""):
            yield re.sub(r"\{[^}]*\}", value, route.path)


def edge_paths():
    """The record's shape at its edges: other routes' literals, years in spellings it refuses, empty
    segments, slashes more and fewer, names with what percent-decoding leaves."""
    for country in ("post", "Post", "size", "export", "export.csv", "", "{}", "a b", "\u00e9", "BRZ"):
        for indicator in ("status", "NGDP_R", "", "status.x"):
            for year in ("5", "0", "-5", "-0", "+5", "0001", "\u0663", "5/", "", "1_000", "1" + "0" * 3999):
                for lead, tail in (("", ""), ("/", ""), ("", "/"), ("//", "//")):
                    yield f"{lead}{PREFIX}/{country}/{indicator}/{year}{tail}"
    yield from (PREFIX, PREFIX + "/", PREFIX + "//", "/api/v1/growth/a/b", "/api/v1/growth/a/b/5/c", "/", "",
                "api/v1/growth/a/b/5", "/api/v1/growthx/a/b/5", "/api/v1/growt/a/b/5", "/api/v2/growth/a/b/5",
                "/api/v1/growth/a/b/5\n", "/API/v1/growth/a/b/5")


def random_paths(count=5000):
    chance = random.Random(46)
    for _ in range(count):
        segments = [chance.choice(SEGMENTS) for _ in range(chance.randrange(8))]
        if chance.random() < 0.6:  # mostly a record's shape, three segments after the prefix
            segments = ["api", "v1", "growth", *segments[:chance.choice([1, 2, 3, 3, 3, 4])]]
        yield chance.choice(["/", "", "//"]) + "/".join(segments) + chance.choice(["", "", "/"])


def test_a_record_is_found_without_falcons_finder(router, monkeypatch):
    def no_finder(*args):
        raise AssertionError("falcon's compiled finder was asked")
    monkeypatch.setattr(router, "_find", no_finder)

    resource, method_map, params, template = router.find(f"{PREFIX}/BRZ/NGDP_R/-517")

    assert isinstance(resource, resources.Record)
    assert method_map["PUT"] == resource.on_put
    assert params == {"country": "BRZ", "indicator": "NGDP_R", "year": -517}
    assert template == RECORD_PATH


@pytest.mark.parametrize("paths", [route_paths, edge_paths, random_paths])
def test_every_path_finds_what_falcons_router_finds(router, paths):
    for path in paths():
        assert router.find(path) == CompiledRouter.find(router, path), path


def test_the_job_status_keeps_its_paths(router):
    assert router.find(f"{PREFIX}/post/status/5")[3] == resources.JOB_STATUS_PATH + "/{job}"
    assert router.find(f"{PREFIX}/post/other/5")[3] == RECORD_PATH


class Resource:
    def on_get(self, req: falcon.Request, resp: falcon.Response, **params: object) -> None:
        pass


@pytest.mark.parametrize("record_first", [True, False])
def test_a_route_with_a_literal_country_keeps_its_paths(record_first):
    router = RecordRouter(RECORD_PATH)
    record, latest = Resource(), Resource()
    routes = [(RECORD_PATH, record), (PREFIX + "/latest/{indicator}/{year:year}", latest)]
    for template, resource in routes if record_first else reversed(routes):
        router.add_route(template, resource)

    assert router.find(f"{PREFIX}/latest/NGDP_R/5")[0] is latest
    assert router.find(f"{PREFIX}/latest/NGDP_R/x") is None
    assert router.find(f"{PREFIX}/latest2/NGDP_R/5")[0] is record


@pytest.mark.parametrize("template", [PREFIX + tail for tail in (
    "/{country}/latest/{year:year}", "/{country}/{indicator}/latest", "/{country}/{indicator}/{when:int}",
    "/{name}/{indicator}/{year}", "/{country}/{rest:path}", "/x{country}/{indicator}/{year}")])
@pytest.mark.parametrize("record_first", [True, False])
def test_a_route_that_the_fast_path_would_shadow_is_refused(template, record_first):
    router = RecordRouter(RECORD_PATH)
    routes = [RECORD_PATH, template]
    with pytest.raises(UnacceptableRouteError):
        for each in routes if record_first else reversed(routes):
            router.add_route(each, Resource())


@pytest.mark.parametrize("template", [PREFIX + "/{country}/{indicator}", PREFIX + "/{country}/{indicator}/{year}",
                                      "/api/{v}/growth/{country}/{indicator}/{year:year}"])
def test_a_record_path_is_no_other_shape(template):
    with pytest.raises(ValueError):
        RecordRouter(template)
