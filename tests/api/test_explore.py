"""The explore page at /explore, in process: the page and every file it references are served with their
types, the Content Security Policy of /docs, ETags and gzip; nothing in them names another host or runs
inline; they total under 100 kB. tests/api/test_explore_live.py drives it in Chromium."""

import gzip
import html.parser
import re
import tomllib

import falcon.testing
import pytest
import webtest

from growth_gevent.api import explore, static
from growth_gevent.api.app import create_app
from growth_gevent.config import Config
from tests.helpers.support import ROOT, memory_store

TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
ANY_URL = re.compile(rb"https?://[^\s\"'`]*")
# The one URL the script holds, a name that no browser fetches: SVG's namespace, which createElementNS needs.
SVG_NAMESPACE = b"http://www.w3.org/2000/svg"
MAX_TOTAL_BYTES = 100_000


@pytest.fixture(scope="module")
def app():
    store = memory_store()
    yield create_app(store, Config())
    store.close()


@pytest.fixture
def browser(app):
    return webtest.TestApp(app)


@pytest.fixture
def raw(app):
    """A client that leaves Content-Encoding as sent (WebTest decodes gzip)."""
    return falcon.testing.TestClient(app)


class _Page(html.parser.HTMLParser):
    """The URLs of a page's src and href attributes, its script elements and any inline handler or style."""

    def __init__(self):
        super().__init__()
        self.urls, self.scripts, self.inline = [], [], []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.urls += [value for name, value in attrs if name in ("src", "href")]
        self.inline += [name for name, _ in attrs if name.startswith("on") or name == "style"]
        if tag == "script":
            self.scripts.append([dict(attrs).get("src"), ""])
        self.inline += ["<style>"] if tag == "style" else []
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1][1] += data


def parsed(body):
    parser = _Page()
    parser.feed(body.decode())
    return parser


def own_files(page):
    """The URLs of the page that are files of this server's (not the docs link, nor the empty data: icon)."""
    return sorted(url for url in parsed(page).urls if url.startswith(explore.PAGE_PATH + "/"))


def test_the_page_is_html_under_the_docs_policy_revalidated_at_every_visit(browser):
    response = browser.get("/explore")
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.headers["Content-Security-Policy"] == static.PAGE_POLICY
    assert "default-src 'self'" in static.PAGE_POLICY and "unsafe-inline" not in static.PAGE_POLICY
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert browser.get("/docs").headers["Content-Security-Policy"] == static.PAGE_POLICY


def test_the_query_string_is_the_pages_own_state_the_server_sends_the_same_page(browser):
    page = browser.get("/explore").body
    for query in ("?country=BRZ&indicator=NGDP_R&from=2000", "?compare=ARG%2FNGDP_R&unknown=1", "?from=x"):
        assert browser.get("/explore" + query).body == page, query
    assert browser.get("/explore/").body == page


def test_the_root_stays_the_challenges_400(browser):
    assert browser.get("/", status=400).json == {"msg": "error in path"}


def test_every_file_the_page_references_is_served_with_its_type_and_no_other_is(browser):
    urls = own_files(browser.get("/explore").body)
    assert urls == sorted(f"/explore/{name}" for name in explore.MEDIA_TYPES)
    for url in urls:
        response = browser.get(url)
        assert response.headers["Content-Type"] == TYPES[url[url.rindex("."):]], url
        assert response.headers["Cache-Control"] == "no-cache", url
        assert response.headers["X-Content-Type-Options"] == "nosniff", url
        assert response.body == (explore.FILES / url.rsplit("/", 1)[1]).read_bytes(), url


@pytest.mark.parametrize("path", ["/explore/explore.html", "/explore/..%2Fexplore.py", "/explore/%2E%2E",
                                  "/explore/explore.js/x", "/explore/init.js", "/explore/swagger-ui.css"])
def test_any_other_file_is_404_json(browser, path):
    assert browser.get(path, status=404).json == {"msg": "not found"}


def test_nothing_runs_inline_and_no_url_names_another_host(browser):
    page = parsed(browser.get("/explore").body)
    assert page.inline == []
    assert page.scripts == [["/explore/explore.js", ""]]
    assert all(url.startswith("/") and not url.startswith("//") or url == "data:," for url in page.urls), page.urls
    assert ANY_URL.findall(browser.get("/explore").body) == []
    assert ANY_URL.findall(browser.get("/explore/explore.css").body) == []
    assert ANY_URL.findall(browser.get("/explore/explore.js").body) == [SVG_NAMESPACE]


def test_the_script_reads_the_public_api_and_writes_nothing(browser):
    script = browser.get("/explore/explore.js").body.decode()
    assert 'const API = "/api/v1/growth";' in script
    assert re.findall(r"fetch\(([^,)]*)", script) == ["url"]  # one place fetches: getJSON, a GET
    # No other method, no other way to send, nothing kept in the browser (the curl line it shows is text).
    assert not re.search(r"method\s*:|XMLHttpRequest|sendBeacon|WebSocket|localStorage|document\.cookie", script)


def test_the_files_total_under_100_kB(browser):
    files = sorted(path.name for path in explore.FILES.iterdir())
    assert files == sorted(["explore.html", *explore.MEDIA_TYPES])
    sizes = {name: len((explore.FILES / name).read_bytes()) for name in files}
    assert sum(sizes.values()) < MAX_TOTAL_BYTES, sizes


def test_head_answers_the_headers_without_a_body(browser):
    for path in ("/explore", "/explore/explore.js"):
        response = browser.head(path)
        assert response.headers["Content-Length"] == str(len(browser.get(path).body)), path
        assert response.body == b"", path


def test_the_script_comes_gzipped_to_a_client_that_takes_it(raw):
    plain = raw.simulate_get("/explore/explore.js")
    packed = raw.simulate_get("/explore/explore.js", headers={"Accept-Encoding": "gzip, deflate, br"})
    assert packed.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(packed.content) == plain.content
    assert len(packed.content) < len(plain.content) / 2
    assert packed.headers["Vary"] == plain.headers["Vary"] == "Accept-Encoding"
    assert packed.headers["ETag"] == f"W/{plain.headers['ETag']}"
    assert raw.simulate_get("/explore/explore.js", headers={"Accept-Encoding": "gzip", "If-None-Match":
                                                            packed.headers["ETag"]}).status_code == 304
    assert "Content-Encoding" not in raw.simulate_get("/explore/explore.js", headers={"Accept-Encoding": "br"}).headers


def test_the_pages_files_ship_in_the_wheel():
    # setuptools' package-data, as pyproject.toml says it: what `pip install .` carries (the image copies the folder).
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["*"]
    package = ROOT / "growth_gevent" / "api"
    shipped = {path.name for pattern in patterns for path in package.glob(pattern)}
    assert {path.name for path in explore.FILES.iterdir()} <= shipped
