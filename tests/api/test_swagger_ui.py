"""Swagger UI at /docs: every file the page references is served, with its type and caching headers, and
nothing in the page or its own script points at another host."""

import gzip
import html.parser
import re

import falcon.testing
import pytest
import swagger_ui_bundle
import webtest

from growth_gevent.api import swagger_ui
from growth_gevent.api.app import create_app
from growth_gevent.config import Config
from tests.helpers.support import memory_store

TYPES = {".css": "text/css", ".js": "text/javascript", ".png": "image/png"}
ANY_URL = re.compile(rb"https?://")


@pytest.fixture(scope="module")
def app():
    """One app for the module: the docs hold no state, and each app gzips the 1 MB script once (~70 ms)."""
    store = memory_store()
    yield create_app(store, Config())
    store.close()


@pytest.fixture
def docs(app):
    return webtest.TestApp(app)


class _References(html.parser.HTMLParser):
    """The URLs of a page's src and href attributes."""

    def __init__(self):
        super().__init__()
        self.urls = []

    def handle_starttag(self, tag, attrs):
        self.urls += [value for name, value in attrs if name in ("src", "href")]


def references(page):
    parser = _References()
    parser.feed(page.decode())
    return parser.urls


def test_the_page_is_html_revalidated_at_every_visit(docs):
    response = docs.get("/docs")
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.headers["Cache-Control"] == "no-cache"
    assert b'<div id="swagger-ui"></div>' in response.body
    assert docs.get("/docs/").body == response.body  # a trailing slash is ignored, as everywhere


def test_every_file_the_page_references_is_served_with_its_type(docs):
    urls = references(docs.get("/docs").body)
    assert sorted(urls) == sorted(f"/docs/{name}" for name in [*swagger_ui.BUNDLE_ASSETS, "init.js"])
    for url in urls:
        response = docs.get(url)
        assert response.content_type == TYPES[url[url.rindex("."):]], url
        assert response.headers["Cache-Control"] == "public, max-age=86400", url
        assert response.headers["X-Content-Type-Options"] == "nosniff", url
        assert response.body, url


def test_the_bundle_files_are_the_packages_own(docs):
    for name in swagger_ui.BUNDLE_ASSETS:
        assert docs.get(f"/docs/{name}").body == (swagger_ui_bundle.swagger_ui_path / name).read_bytes(), name


def test_no_url_in_the_page_or_its_script_names_another_host(docs):
    page, script = docs.get("/docs").body, docs.get("/docs/init.js").body
    assert ANY_URL.findall(page) == []
    assert ANY_URL.findall(script) == []
    assert all(url.startswith("/") and not url.startswith("//") for url in references(page))


def test_the_script_reads_this_servers_document_and_sends_it_to_no_validator(docs):
    script = docs.get("/docs/init.js").body.decode()
    assert 'url: "/openapi.json"' in script
    assert docs.get("/openapi.json").content_type == "application/json"
    # Swagger UI's default sends the document to validator.swagger.io.
    assert "validatorUrl: null" in script


def test_head_answers_the_headers_without_a_body(docs):
    response = docs.head("/docs/swagger-ui.css")
    assert response.headers["Content-Type"] == "text/css; charset=utf-8"
    assert response.headers["Content-Length"] == str(len(docs.get("/docs/swagger-ui.css").body))
    assert response.body == b""


@pytest.mark.parametrize("path", ["/docs/index.html", "/docs/swagger-ui.js.map", "/docs/..%2F__init__.py",
                                  "/docs/%2E%2E", "/docs/swagger-initializer.js", "/docs/init.js/x"])
def test_any_other_file_is_404_json(docs, path):
    assert docs.get(path, status=404).json == {"msg": "not found"}


@pytest.fixture
def raw(app):
    """A client that leaves Content-Encoding as sent (WebTest decodes gzip)."""
    return falcon.testing.TestClient(app)


@pytest.mark.parametrize("accept_encoding", ["gzip", "gzip, deflate, br", "br;q=1.0, gzip;q=0.5", "*",
                                             "*;q=0, gzip"])
def test_the_large_files_come_gzipped_to_a_client_that_takes_it(raw, accept_encoding):
    for name in ("swagger-ui-bundle.js", "swagger-ui.css"):
        plain = raw.simulate_get(f"/docs/{name}")
        packed = raw.simulate_get(f"/docs/{name}", headers={"Accept-Encoding": accept_encoding})
        assert packed.headers["Content-Encoding"] == "gzip", name
        assert gzip.decompress(packed.content) == plain.content, name
        assert len(packed.content) < len(plain.content) / 3, name
        assert packed.headers["Vary"] == plain.headers["Vary"] == "Accept-Encoding", name
        # Another representation, tagged as every gzipped answer is: the weak form of the identity one's tag.
        assert packed.headers["ETag"] == f"W/{plain.headers['ETag']}", name
        assert raw.simulate_get(f"/docs/{name}", headers={"Accept-Encoding": accept_encoding, "If-None-Match":
                                                          packed.headers["ETag"]}).status_code == 304, name


@pytest.mark.parametrize("accept_encoding", [None, "identity", "gzip;q=0", "*;q=0", "br", "gzip;q=x"])
def test_others_get_the_file_as_it_is(raw, accept_encoding):
    headers = {"Accept-Encoding": accept_encoding} if accept_encoding else {}
    response = raw.simulate_get("/docs/swagger-ui-bundle.js", headers=headers)
    assert "Content-Encoding" not in response.headers
    assert response.content == (swagger_ui_bundle.swagger_ui_path / "swagger-ui-bundle.js").read_bytes()


def test_small_files_are_never_gzipped(raw):
    for path in ("/docs", "/docs/init.js", "/docs/favicon-16x16.png"):
        response = raw.simulate_get(path, headers={"Accept-Encoding": "gzip"})
        assert "Content-Encoding" not in response.headers, path
        assert "Vary" not in response.headers, path
