"""Names and units: what a code stands for, set by PATCH on a facet's path and served with the facets (on
Redis too: the ``redis`` run of ``store_kind``)."""

import pytest

from growth_gevent.core.descriptions import MAX_TEXT
from tests.helpers import wide_files
from tests.helpers.support import ROOT, load

RECORDS = [{"Country": "BRA", "Indicator": "NGDP_R", "Value": 1873.288, "Year": 2020},
           {"Country": "ARG", "Indicator": "NY.GDP.MKTP.KD.ZG", "Value": -9.9, "Year": 2020}]
MERGE_PATCH = "application/merge-patch+json"


def patch(client, path, document, status=204, content_type=MERGE_PATCH):
    return client.patch_json(path, document, status=status, headers={"Content-Type": content_type})


def test_a_countrys_name_is_served_with_its_facet_and_others_keep_their_shape(client, store):
    load(client, store, RECORDS)
    patch(client, "/api/v1/growth/countries", {"bra": {"name": "Brazil"}, "CIV": {"name": "Côte d'Ivoire"}})
    assert client.get("/api/v1/growth/countries").json == {"items": [
        {"Country": "ARG", "records": 1, "from": 2020, "to": 2020},
        {"Country": "BRA", "name": "Brazil", "records": 1, "from": 2020, "to": 2020}]}


def test_an_indicators_name_units_and_scale_are_served_in_that_order(client, store):
    load(client, store, RECORDS)
    patch(client, "/api/v1/growth/indicators",
          {"NGDP_R": {"scale": "Billions", "units": "National currency",
                      "name": "Gross domestic product, constant prices"},
           "NY.GDP.MKTP.KD.ZG": {"name": "GDP growth (annual %)"}}, content_type="application/json")
    assert client.get("/api/v1/growth/indicators?country=bra").json == {"items": [
        {"Indicator": "NGDP_R", "name": "Gross domestic product, constant prices", "units": "National currency",
         "scale": "Billions", "records": 1, "from": 2020, "to": 2020}]}
    assert client.get("/api/v1/growth/indicators").json["items"][1] == {
        "Indicator": "NY.GDP.MKTP.KD.ZG", "name": "GDP growth (annual %)", "records": 1, "from": 2020, "to": 2020}


def test_a_patch_merges_a_null_removes_a_field_or_a_description(client, store):
    load(client, store, RECORDS)
    patch(client, "/api/v1/growth/indicators", {"NGDP_R": {"name": "GDP", "units": "Units", "scale": "Billions"},
                                                "NY.GDP.MKTP.KD.ZG": {"name": "Growth"}})
    patch(client, "/api/v1/growth/indicators", {"NGDP_R": {"units": None, "scale": " "}, "ny.gdp.mktp.kd.zg": None})
    items = client.get("/api/v1/growth/indicators").json["items"]
    assert [item.get("name") for item in items] == ["GDP", None]
    assert "units" not in items[0] and "scale" not in items[0]
    assert store.descriptions("indicator") == {"NGDP_R": {"name": "GDP"}}


@pytest.mark.parametrize("document, message", [
    ([], 'body must be a JSON object: {"CODE": {"name": "..."}, ...}'),
    ({"BRA": "Brazil"}, "BRA: must be an object of name, or null"),
    ({"BRA": {"units": "x"}}, "BRA: unknown field 'units' (fields: name)"),
    ({"BRA": {"name": 1}}, "BRA: name must be a string or null"),
    ({"BRA": {"name": "x" * (MAX_TEXT + 1)}}, f"BRA: name must be at most {MAX_TEXT} characters"),
    ({"BRA": {"name": "a\nb"}}, "BRA: name must be UTF-8 text without control characters"),
    ({"A/B": {"name": "x"}}, "'A/B': Country must not contain '/'"),
])
def test_a_bad_patch_is_422_naming_what_is_wrong_and_changes_nothing(client, store, document, message):
    body = {"ARG": {"name": "Argentina"}, **document} if isinstance(document, dict) else document
    assert patch(client, "/api/v1/growth/countries", body, status=422).json == {"msg": message}
    assert store.descriptions("country") == {}


def test_a_patch_that_is_not_json_is_415_or_400(client):
    client.patch("/api/v1/growth/countries", b"{}", headers={"Content-Type": "text/plain"}, status=415)
    client.patch("/api/v1/growth/countries", b"{", headers={"Content-Type": MERGE_PATCH}, status=400)
    client.patch("/api/v1/growth/countries?x=1", b"{}", headers={"Content-Type": MERGE_PATCH}, status=400)


def test_the_seeds_facets_are_unchanged_without_descriptions(client, store):
    load(client, store, RECORDS)
    assert client.get("/api/v1/growth/countries").body == (
        b'{"items":[{"Country":"ARG","records":1,"from":2020,"to":2020},'
        b'{"Country":"BRA","records":1,"from":2020,"to":2020}]}')


def test_the_api_pages_example_is_what_the_facet_answers_for_a_weo_file(client, store):
    """docs/api.md's ``indicators?country=BRA``, byte for byte, once a WEO file's records and names are in."""
    load(client, store, [{"Country": country, "Indicator": indicator, "Year": year, "Value": value}
                         for (country, indicator, year), value in wide_files.WEO_RECORDS.items()])
    patch(client, "/api/v1/growth/indicators", wide_files.WEO_INDICATORS)
    page = (ROOT / "docs" / "api.md").read_text()
    command = "$ curl -s localhost:8080/api/v1/growth/indicators?country=BRA\n"
    shown = page[page.index(command) + len(command):].split("\n", 1)[0]
    assert shown == client.get("/api/v1/growth/indicators?country=BRA").text
