"""The files of this server's pages (growth_gevent/api/static.py), for /docs and /explore alike: conditional
requests by their ETags."""

import pytest
import webtest

from growth_gevent.api import static
from growth_gevent.api.app import create_app
from growth_gevent.config import Config
from tests.helpers.support import memory_store


@pytest.fixture(scope="module")
def pages():
    store = memory_store()
    yield webtest.TestApp(create_app(store, Config()))
    store.close()


@pytest.mark.parametrize("path", ["/docs", "/docs/init.js", "/docs/swagger-ui-bundle.js",
                                  "/explore", "/explore/explore.js", "/explore/explore.css"])
def test_an_etag_that_matches_is_304_without_a_body(pages, path):
    etag = pages.get(path).headers["ETag"]
    for if_none_match in (etag, f'W/"other", {etag}', "*"):
        response = pages.get(path, headers={"If-None-Match": if_none_match}, status=304)
        assert response.body == b""
        assert response.headers["ETag"] == etag
    assert pages.get(path, headers={"If-None-Match": '"other"'}).status_int == 200


@pytest.mark.parametrize("path", ["/docs/swagger-ui-es-bundle.js", "/docs/swagger-ui-bundle.js.map",
                                  "/docs/index.html", "/explore/explore.html", "/docs/..", "/docs/not-a-file.js"])
def test_a_file_no_page_serves_is_404_and_held_by_nothing(pages, path):
    """Files are kept for the process (``static._read``), but only those a page serves: the bundle's folder
    holds some 7 MB that no page uses."""
    held = static._read.cache_info().currsize
    pages.get(path, status=404)
    assert static._read.cache_info().currsize == held
