"""gzip for clients that take it (Accept-Encoding), on bodies worth it: pages, series, the export (streamed),
/openapi.json; with Vary: Accept-Encoding wherever the answer may be compressed."""

import gzip
import json

import falcon.testing
import pytest

from growth_gevent.api.compression import GZIP_AT_LEAST_BYTES
from tests.helpers.support import load

GZIP = {"Accept-Encoding": "gzip"}


@pytest.fixture
def raw(client, shared_app):
    """A client of the test's app that leaves Content-Encoding as sent (WebTest decodes gzip)."""
    return falcon.testing.TestClient(shared_app.app)


RECORDS = [{"Country": "BRZ", "Indicator": "NGDP_R", "Value": year / 7, "Year": year} for year in range(1950, 2050)]


@pytest.mark.parametrize("url", ["/api/v1/growth", "/api/v1/growth?format=csv", "/api/v1/growth/BRZ/NGDP_R",
                                 "/api/v1/growth/export", "/api/v1/growth/export?format=ndjson",
                                 "/api/v1/growth/export?format=csv", "/openapi.json"])
def test_a_large_body_is_gzipped_for_a_client_that_takes_it(client, raw, store, url):
    load(client, store, RECORDS)
    plain = raw.simulate_get(url)
    assert len(plain.content) >= GZIP_AT_LEAST_BYTES and "Content-Encoding" not in plain.headers
    zipped = raw.simulate_get(url, headers=GZIP)
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(zipped.content) == plain.content
    assert len(zipped.content) < len(plain.content) / 3
    for response in (plain, zipped):
        assert "Accept-Encoding" in response.headers["Vary"].split(", ")
    assert plain.headers.get("Content-Type") == zipped.headers.get("Content-Type")


def test_the_other_vary_reasons_are_kept(client, store):
    load(client, store, RECORDS)
    assert client.get("/api/v1/growth", headers=GZIP).headers["Vary"] == "Accept, Accept-Encoding"


@pytest.mark.parametrize("accept_encoding", ["identity", "gzip;q=0", "br", "", "*;q=0", "deflate, gzip;q=0"])
def test_not_gzipped_for_a_client_that_does_not_take_it(client, raw, store, accept_encoding):
    load(client, store, RECORDS)
    response = raw.simulate_get("/api/v1/growth", headers={"Accept-Encoding": accept_encoding})
    assert "Content-Encoding" not in response.headers
    assert response.json["total"] == len(RECORDS)


@pytest.mark.parametrize("accept_encoding", ["GZIP", "br, gzip;q=0.5", "*", "x-gzip, gzip"])
def test_gzip_taken_in_any_spelling(client, raw, store, accept_encoding):
    load(client, store, RECORDS)
    response = raw.simulate_get("/api/v1/growth", headers={"Accept-Encoding": accept_encoding})
    assert response.headers["Content-Encoding"] == "gzip"


def test_a_small_body_is_sent_as_it_is_and_does_not_vary(client, raw, store):
    load(client, store, RECORDS[:1])
    for url in ("/api/v1/growth/BRZ/NGDP_R/1950", "/api/v1/growth?limit=1", "/api/v1/growth/nothing/here/1"):
        response = raw.simulate_get(url, headers=GZIP)
        assert "Content-Encoding" not in response.headers
        assert "Accept-Encoding" not in response.headers.get("Vary", "")
        json.loads(response.content)


def test_head_says_what_get_would_send(client, raw, store):
    load(client, store, RECORDS)
    get, head = (raw.simulate_request(method, "/api/v1/growth", headers=GZIP) for method in ("GET", "HEAD"))
    assert head.content == b""
    assert head.headers["Content-Encoding"] == "gzip"
    assert head.headers["Content-Length"] == get.headers["Content-Length"]


def test_an_asset_encoded_by_its_resource_is_left_alone(raw):
    for headers in (GZIP, {}):
        response = raw.simulate_get("/docs/swagger-ui-bundle.js", headers=headers)
        assert response.headers["Vary"] == "Accept-Encoding"
    assert gzip.decompress(raw.simulate_get("/docs/swagger-ui-bundle.js", headers=GZIP).content) == response.content


class TestETagOfGzip:
    """A gzipped answer is another representation: its tag is the weak form of the identity one (nginx's
    rule), so that If-None-Match (compared weakly) revalidates either, and If-Match (compared strongly)
    never takes a gzipped answer's tag as the record's."""

    URL = "/api/v1/growth/countries"

    @pytest.fixture
    def tags(self, client, raw, store):
        load(client, store, [{"Country": f"C{n:03}", "Indicator": "NGDP_R", "Value": n, "Year": 2000}
                             for n in range(40)])  # facets of over 1 kB
        plain = raw.simulate_get(self.URL)
        gzipped = raw.simulate_get(self.URL, headers=GZIP)
        assert (plain.headers.get("Content-Encoding"), gzipped.headers["Content-Encoding"]) == (None, "gzip")
        return plain.headers["ETag"], gzipped.headers["ETag"]

    def test_differs_from_the_identity_tag_as_its_weak_form(self, tags):
        plain, gzipped = tags
        assert not plain.startswith("W/")
        assert gzipped == f"W/{plain}"

    @pytest.mark.parametrize("encoding", ["gzip", "identity"])
    @pytest.mark.parametrize("which", [0, 1])
    def test_either_tag_revalidates_with_the_tag_the_answer_would_carry(self, raw, tags, encoding, which):
        again = raw.simulate_get(self.URL, headers={"If-None-Match": tags[which], "Accept-Encoding": encoding})
        assert again.status_code == 304 and again.content == b""
        assert again.headers["ETag"] == tags[encoding == "gzip"]
        assert "Accept-Encoding" in again.headers["Vary"]

    def test_a_changed_facet_changes_both(self, raw, store, tags):
        store.put(("C000", "NGDP_R", 2001), 1)
        for tag in tags:
            assert raw.simulate_get(self.URL, headers={"If-None-Match": tag, **GZIP}).status_code == 200
