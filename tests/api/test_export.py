"""Getting the data out, in-process: the export, the facets and the list's X-Total-Count (on Redis too,
through tests/api/test_export_live.py)."""

import csv
import io
import json

import pytest

from growth_gevent.stores.base import EXPORT_BATCH_RECORDS
from tests.helpers.support import load

EXPORT = "/api/v1/growth/export"
RECORDS = [{"Country": country, "Indicator": indicator, "Value": value, "Year": year}
           for country, indicator, value, year in [
               ("BRZ", "NGDP_R", 183.26, 2002), ("BRZ", "NGDP_R", 3, 2003), ("ARG", "LUR", -1.5, 1990),
               ("ARG", "NGDP_R", 7, 2002), ("=CMD", "LUR", 1e-7, 2002), ("ÉTÉ", "X,Y", 2, 1)]]
IN_ORDER = sorted(RECORDS, key=lambda record: (record["Country"], record["Indicator"], record["Year"]))


def pages(client, query=""):
    """Every record of the list's pages, following "next"."""
    items, url = [], f"/api/v1/growth?limit=2{query}"
    while url:
        page = client.get(url).json
        items += page["items"]
        url = page["next"]
    return items


def ndjson(body):
    assert body == b"" or body.endswith(b"\n")
    return [json.loads(line) for line in body.splitlines()]


class TestExport:
    def test_json_is_one_array_of_every_record_in_the_lists_order(self, client, store):
        load(client, store, RECORDS)
        response = client.get(EXPORT)
        assert response.content_type == "application/json"
        assert response.json == IN_ORDER == pages(client)
        assert response.headers["Vary"] == "Accept, Accept-Encoding"  # streamed: gzipped for those who take it
        assert "Content-Disposition" not in response.headers

    @pytest.mark.parametrize("query", ["country=arg", "indicator=NGDP_R", "year=2002", "from=1990&to=2002",
                                       "from=2003", "country=BRZ&indicator=ngdp_r&to=2002", "country=NONE"])
    def test_takes_the_lists_filters(self, client, store, query):
        load(client, store, RECORDS)
        assert client.get(f"{EXPORT}?{query}").json == pages(client, "&" + query)

    def test_csv_is_an_attachment_written_as_the_csv_pages_are(self, client, store):
        load(client, store, RECORDS)
        response = client.get(f"{EXPORT}?format=csv")
        assert response.headers["Content-Type"] == "text/csv; charset=utf-8"
        assert response.headers["Content-Disposition"] == 'attachment; filename="growth.csv"'
        page = client.get("/api/v1/growth?format=csv&limit=1000").body
        assert response.body == page
        rows = list(csv.DictReader(io.StringIO(response.body.decode())))
        assert [row["Country"] for row in rows] == ["'=CMD", "ARG", "ARG", "BRZ", "BRZ", "ÉTÉ"]  # OWASP's escape
        assert rows[-1]["Indicator"] == "X,Y"

    @pytest.mark.parametrize("accept, media_type", [
        ("text/csv", "text/csv"), ("application/x-ndjson", "application/x-ndjson"),
        ("application/json", "application/json"), ("text/csv;q=0.5, application/x-ndjson", "application/x-ndjson"),
        ("text/html", "application/json"), ("*/*", "application/json")])
    def test_answers_what_accept_prefers(self, client, store, accept, media_type):
        load(client, store, RECORDS)
        assert client.get(EXPORT, headers={"Accept": accept}).content_type == media_type

    def test_format_wins_over_accept(self, client):
        assert client.get(f"{EXPORT}?format=ndjson", headers={"Accept": "text/csv"}).content_type == \
            "application/x-ndjson"

    def test_ndjson_is_a_record_a_line(self, client, store):
        load(client, store, RECORDS)
        response = client.get(f"{EXPORT}?format=ndjson")
        assert response.content_type == "application/x-ndjson"
        assert ndjson(response.body) == IN_ORDER

    @pytest.mark.parametrize("format, body", [("json", b"[]"), ("csv", b"Country,Indicator,Value,Year\r\n"),
                                              ("ndjson", b"")])
    def test_an_empty_export_is_a_valid_empty_document(self, client, format, body):
        assert client.get(f"{EXPORT}?format={format}").body == body

    def test_many_batches_make_one_document_in_every_format(self, client, store):
        records = [{"Country": f"C{n % 3}", "Indicator": "I", "Value": n, "Year": n}
                   for n in range(2 * EXPORT_BATCH_RECORDS + 5)]
        # Past the test app's body limit: given to the store.
        store.submit_bulk([((r["Country"], r["Indicator"], r["Year"]), r["Value"]) for r in records])
        assert store.wait_idle(10)
        in_order = sorted(records, key=lambda record: (record["Country"], record["Year"]))
        assert client.get(EXPORT).json == in_order
        assert ndjson(client.get(f"{EXPORT}?format=ndjson").body) == in_order
        rows = list(csv.DictReader(io.StringIO(client.get(f"{EXPORT}?format=csv").body.decode())))
        assert [int(row["Year"]) for row in rows] == [record["Year"] for record in in_order]

    @pytest.mark.parametrize("query, disposition", [
        ("country=brz&indicator=ngdp_r", 'attachment; filename="BRZ_NGDP_R.csv"'),
        ("country=ARG&from=1990", 'attachment; filename="ARG.csv"'),
        ("indicator=NY.GDP.MKTP.KD.ZG", 'attachment; filename="NY.GDP.MKTP.KD.ZG.csv"'),
        ("country=%C3%A9t%C3%A9&indicator=X%2CY",
         "attachment; filename=\"_T__X_Y.csv\"; filename*=UTF-8''%C3%89T%C3%89_X%2CY.csv"),
        ("country=%22%3B%20a", "attachment; filename=\"___A.csv\"; filename*=UTF-8''%22%3B%20A.csv"),
    ])
    def test_a_filtered_csv_is_named_after_what_it_holds(self, client, store, query, disposition):
        response = client.get(f"{EXPORT}?format=csv&{query}")
        assert response.headers["Content-Disposition"] == disposition

    def test_head_answers_the_headers_only(self, client, store):
        load(client, store, RECORDS)
        response = client.head(f"{EXPORT}?format=csv")
        assert (response.status_int, response.body) == (200, b"")
        assert response.headers["Content-Disposition"] == 'attachment; filename="growth.csv"'

    @pytest.mark.parametrize("query, message", [
        ("limit=10", "unknown query parameter 'limit'; known: country, format, from, indicator, to, year"),
        ("format=xml", "format must be csv, json or ndjson"),
        ("year=x", "year must be an integer"),
        ("country=A&country=B", "query parameter 'country' is given more than once"),
    ])
    def test_a_bad_query_is_400(self, client, query, message):
        assert client.get(f"{EXPORT}?{query}", status=400).json == {"msg": message}



class TestExportFile:
    """``/api/v1/growth/export.csv`` (``.ndjson``, ``.json``): the export in the format its name says, whatever
    Accept says, for a generated client that reads it as text and for a URL that names its file."""

    @pytest.mark.parametrize("format", ["csv", "ndjson", "json"])
    def test_is_the_export_in_the_format_it_names_whatever_accept_says(self, client, store, format):
        load(client, store, RECORDS)
        response = client.get(f"{EXPORT}.{format}?country=arg", headers={"Accept": "text/html"})
        expected = client.get(f"{EXPORT}?country=arg&format={format}")
        assert (response.status_int, response.headers["Content-Type"], response.body) == \
            (200, expected.headers["Content-Type"], expected.body)
        assert response.headers["Vary"] == "Accept-Encoding"  # not Accept: the name says the format

    def test_csv_is_an_attachment(self, client):
        assert client.get(f"{EXPORT}.csv").headers["Content-Disposition"] == 'attachment; filename="growth.csv"'

    @pytest.mark.parametrize("url, status, message", [
        (f"{EXPORT}.xml", 404, "no export as 'xml': export.csv, export.json or export.ndjson"),
        (f"{EXPORT}.csv?format=json", 400,
         "unknown query parameter 'format'; known: country, from, indicator, to, year"),
    ])
    def test_another_format_is_404_and_a_format_parameter_400(self, client, url, status, message):
        assert client.get(url, status=status).json == {"msg": message}


class TestFacets:
    def test_countries_with_their_records_and_year_range(self, client, store):
        load(client, store, RECORDS)
        response = client.get("/api/v1/growth/countries")
        assert response.json == {"items": [
            {"Country": "=CMD", "records": 1, "from": 2002, "to": 2002},
            {"Country": "ARG", "records": 2, "from": 1990, "to": 2002},
            {"Country": "BRZ", "records": 2, "from": 2002, "to": 2003},
            {"Country": "ÉTÉ", "records": 1, "from": 1, "to": 1}]}

    def test_indicators_with_their_records_and_year_range(self, client, store):
        load(client, store, RECORDS)
        assert client.get("/api/v1/growth/indicators").json == {"items": [
            {"Indicator": "LUR", "records": 2, "from": 1990, "to": 2002},
            {"Indicator": "NGDP_R", "records": 3, "from": 2002, "to": 2003},
            {"Indicator": "X,Y", "records": 1, "from": 1, "to": 1}]}

    def test_each_filtered_by_the_other_as_the_list_names_them(self, client, store):
        load(client, store, RECORDS)
        assert client.get("/api/v1/growth/countries?indicator=ngdp_r").json == {"items": [
            {"Country": "ARG", "records": 1, "from": 2002, "to": 2002},
            {"Country": "BRZ", "records": 2, "from": 2002, "to": 2003}]}
        assert client.get("/api/v1/growth/indicators?country=arg").json == {"items": [
            {"Indicator": "LUR", "records": 1, "from": 1990, "to": 1990},
            {"Indicator": "NGDP_R", "records": 1, "from": 2002, "to": 2002}]}
        assert client.get("/api/v1/growth/indicators?country=NONE").json == {"items": []}

    def test_the_counts_are_those_of_the_list(self, client, store):
        load(client, store, RECORDS)
        for item in client.get("/api/v1/growth/countries").json["items"]:
            query = f"/api/v1/growth?country={item['Country']}&from={item['from']}&to={item['to']}"
            assert client.get(query.replace("=CMD", "%3DCMD")).json["total"] == item["records"]

    @pytest.mark.parametrize("url, message", [
        ("/api/v1/growth/countries?country=A", "unknown query parameter 'country'; known: indicator"),
        ("/api/v1/growth/indicators?indicator=A", "unknown query parameter 'indicator'; known: country"),
    ])
    def test_a_bad_query_is_400(self, client, url, message):
        assert client.get(url, status=400).json == {"msg": message}

    def test_head_answers_the_headers_only(self, client):
        assert client.head("/api/v1/growth/countries").body == b""


class TestTotalCount:
    @pytest.mark.parametrize("query", ["", "&format=csv", "&country=BRZ", "&format=csv&indicator=LUR"])
    def test_every_page_says_how_many_records_match(self, client, store, query):
        load(client, store, RECORDS)
        response = client.get(f"/api/v1/growth?limit=1{query}")
        total = client.get(f"/api/v1/growth?limit=1{query.replace('&format=csv', '')}").json["total"]
        assert response.headers["X-Total-Count"] == str(total)

    def test_an_empty_page_says_zero(self, client):
        assert client.get("/api/v1/growth?format=csv").headers["X-Total-Count"] == "0"



class TestCollectionLink:
    """Every page says where all its rows are, beside its next page: ``Link: <export>; rel="collection"`` (RFC
    6573), the export file of the page's format with its filters, which ``requests``' ``links`` reads too."""

    @pytest.mark.parametrize("query, export", [
        ("format=csv", "/api/v1/growth/export.csv"),
        ("format=csv&country=arg&from=1990&limit=1&offset=1", "/api/v1/growth/export.csv?country=arg&from=1990"),
        ("country=BRZ&limit=1", "/api/v1/growth/export.json?country=BRZ"),
    ])
    def test_every_page_links_to_the_export_of_its_rows(self, client, store, query, export):
        load(client, store, RECORDS)
        response = client.get(f"/api/v1/growth?{query}")
        media_type = response.headers["Content-Type"].split(";")[0]
        assert f'<{export}>; rel=collection; type="{media_type}"' in response.headers["Link"]
        every = client.get(export).body
        if "csv" in export:
            assert len(every.decode().splitlines()) - 1 == int(response.headers["X-Total-Count"])
        else:
            assert len(json.loads(every)) == int(response.headers["X-Total-Count"])
