"""CORS: off by default; with GROWTH_CORS_ORIGINS, answers and preflights for the listed origins only."""

import pytest
import webtest

from growth_gevent.api.app import create_app
from growth_gevent.config import Config, ConfigError
from tests.helpers.api import ORIGIN, RECORD_URL
from tests.helpers.support import memory_store


def client(origins=None):
    return webtest.TestApp(create_app(memory_store(), Config(cors_origins=origins)))


def cors_headers(response):
    return {name: value for name, value in response.headers.items() if name.lower().startswith("access-control-")}


def preflight(app, path, method, headers="content-type, authorization", origin=ORIGIN):
    return app.options(path, headers={"Origin": origin, "Access-Control-Request-Method": method,
                                      "Access-Control-Request-Headers": headers})


class TestOffByDefault:
    def test_no_access_control_headers_on_answers_or_preflights(self):
        app = client()
        assert Config().cors_origins is None
        assert cors_headers(app.get("/api/v1/growth", headers={"Origin": ORIGIN})) == {}
        assert cors_headers(preflight(app, RECORD_URL, "PUT")) == {}
        assert "Origin" not in app.get("/api/v1/growth", headers={"Origin": ORIGIN}).headers.get("Vary", "")


class TestListedOrigins:
    @pytest.fixture
    def app(self):
        return client((ORIGIN, "http://localhost:3000"))

    def test_an_answer_to_a_listed_origin_allows_it_and_exposes_our_headers(self, app):
        response = app.get("/api/v1/growth", headers={"Origin": ORIGIN})
        assert response.headers["Access-Control-Allow-Origin"] == ORIGIN
        assert response.headers["Access-Control-Expose-Headers"] == \
            "Retry-After, X-Request-ID, ETag, X-Total-Count, Link"
        assert "Access-Control-Allow-Credentials" not in response.headers
        assert response.headers["Vary"] == "Accept, Origin"

    def test_another_origin_gets_no_access_control_headers(self, app):
        for origin in ("https://evil.example", "https://app.example.com.evil.example", "null"):
            response = app.get("/api/v1/growth", headers={"Origin": origin})
            assert cors_headers(response) == {}, origin
            assert cors_headers(preflight(app, RECORD_URL, "PUT", origin=origin)) == {}, origin

    def test_every_answer_varies_with_origin_so_that_caches_keep_them_apart(self, app):
        assert app.get("/api/v1/growth/size").headers["Vary"] == "Origin"

    @pytest.mark.parametrize("method", ["PUT", "DELETE"])
    def test_a_preflight_for_a_write_with_a_json_body_and_a_bearer_token_is_allowed(self, app, method):
        response = preflight(app, RECORD_URL, method)
        assert response.status_int == 200
        assert response.headers["Access-Control-Allow-Origin"] == ORIGIN
        assert set(response.headers["Access-Control-Allow-Methods"].replace(" ", "").split(",")) == {
            "GET", "HEAD", "PUT", "DELETE"}
        assert response.headers["Access-Control-Allow-Headers"] == "content-type, authorization"
        assert response.headers["Access-Control-Max-Age"] == "86400"

    def test_a_preflight_for_the_bulk_post(self, app):
        response = preflight(app, "/api/v1/growth", "POST", headers="content-type")
        assert "POST" in response.headers["Access-Control-Allow-Methods"]

    def test_the_write_itself_and_its_errors_carry_the_origin(self, app):
        headers = {"Origin": ORIGIN, "Content-Type": "application/json"}
        assert app.put(RECORD_URL, b'{"value": 1.5}', headers=headers, status=201).headers[
            "Access-Control-Allow-Origin"] == ORIGIN
        refused = app.put(RECORD_URL, b'{"value": "x"}', headers=headers, status=422)
        assert refused.headers["Access-Control-Allow-Origin"] == ORIGIN
        assert app.delete("/api/v1/growth/NO/NO/1", headers=headers, status=404).headers[
            "Access-Control-Allow-Origin"] == ORIGIN


def test_any_origin_with_a_star():
    app = client(("*",))
    response = app.get("/api/v1/growth", headers={"Origin": "https://anyone.example"})
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert response.headers["Vary"] == "Accept"
    assert preflight(app, RECORD_URL, "DELETE").headers["Access-Control-Allow-Origin"] == "*"


class TestSetting:
    @pytest.mark.parametrize("raw, origins", [
        ("*", ("*",)),
        ("https://app.example.com", ("https://app.example.com",)),
        (" HTTPS://App.Example.com , http://localhost:3000,", ("https://app.example.com", "http://localhost:3000")),
        ("http://[::1]:8080", ("http://[::1]:8080",)),
    ])
    def test_star_or_origins_separated_by_commas(self, raw, origins):
        assert Config.from_env({"GROWTH_CORS_ORIGINS": raw}).cors_origins == origins

    @pytest.mark.parametrize("origin", ["https://app.example.com/", "app.example.com", "ftp://x.example",
                                        "https://x.example/path", "*", "https://user@x.example"])
    def test_what_no_browser_sends_as_an_origin_stops_start_up(self, origin):
        with pytest.raises(ConfigError) as refused:
            Config.from_env({"GROWTH_CORS_ORIGINS": f"https://ok.example,{origin}"})
        assert str(refused.value) == (
            "GROWTH_CORS_ORIGINS must be * or origins such as https://app.example.com,http://localhost:3000 "
            f"(scheme, host and port: no path, no trailing slash), got {origin.lower()!r}")


