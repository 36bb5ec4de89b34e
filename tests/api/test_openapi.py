"""The OpenAPI document: in step with the app's routes, and served as is (its validity against the OpenAPI
schema, and the fuzz that holds the app to it: tests/fuzz/test_openapi_fuzz.py, beside the other third-party
OpenAPI tools, whose imports take half a second)."""

import json

import falcon.inspect
import pytest
import webtest

from growth_gevent.api.app import create_app
from growth_gevent.api.auth import WRITE_METHODS
from growth_gevent.config import Config
from growth_gevent.stores.base import JOBS_KEPT
from tests.helpers.openapi import (
    CONVERTER,
    DOCUMENT,
    DOCUMENT_PATH,
    HTTP_METHODS,
    document_operations,
    table_operations,
)
from tests.helpers.support import memory_store


def document_operation(template, method):
    """The operation that answers ``method`` on ``template``: a HEAD is its GET, without the body."""
    item = DOCUMENT["paths"][template]
    return item["get" if method.upper() == "HEAD" else method.lower()]


def _app_operations(app):
    """(path template, method) of every responder the app routes to.

    Falcon adds OPTIONS and the 405 responders itself; those are marked internal. Converters such as
    ``{year:int}`` are written ``{year}`` in OpenAPI.
    """
    return {(CONVERTER.sub(r"{\1}", route.path), method.method)
            for route in falcon.inspect.inspect_routes(app)
            for method in route.methods if not method.internal}


@pytest.fixture
def app():
    store = memory_store()
    yield create_app(store, Config())
    store.close()


class TestDocument:
    def test_file_is_plain_json_with_nothing_duplicated(self):
        def no_duplicates(pairs):
            keys = [key for key, _ in pairs]
            assert len(keys) == len(set(keys)), f"duplicate keys {keys}"
            return dict(pairs)
        assert json.loads(DOCUMENT_PATH.read_text(encoding="utf-8"), object_pairs_hook=no_duplicates) == DOCUMENT

    def test_documents_every_route_of_the_table_and_nothing_else(self):
        documented, routed = document_operations(), table_operations()
        assert sorted(routed - documented) == [], "routes the document does not describe"
        assert sorted(documented - routed) == [], "documented operations the table does not have"

    def test_no_example_would_be_sent_as_a_condition(self):
        """Swagger UI's "Try it out" fills a parameter with its example: an If-Match or If-None-Match filled
        so made every PUT and DELETE of an existing record a 412."""
        for name, parameter in DOCUMENT["components"]["parameters"].items():
            if parameter["in"] == "header" and parameter["name"].lower().startswith("if-"):
                assert not {"example", "examples", "default"} & {*parameter, *parameter["schema"]}, name

    def test_every_route_that_answers_json_declares_it_first_and_the_export_file_text_first(self):
        """Swagger UI sends the first media type as Accept, and a generator that reads one media type per answer
        (openapi-python-client) takes the first it knows: JSON, and its typed models, on every route that answers
        it; the other formats are still declared. The export as a file answers text, each format as sent."""
        served = {"/api/v1/growth": ["application/json", "text/csv"],
                  "/api/v1/growth/{country}/{indicator}": ["application/json", "text/csv"],
                  "/api/v1/growth/export": ["application/json", "text/csv", "application/x-ndjson"],
                  "/api/v1/growth/export.{format}": ["text/csv", "application/x-ndjson", "application/json"]}
        for template, media_types in served.items():
            assert list(DOCUMENT["paths"][template]["get"]["responses"]["200"]["content"]) == media_types

    def test_the_format_parameter_says_where_a_generated_client_gets_text(self):
        description = DOCUMENT["components"]["parameters"]["Format"]["description"]
        assert "parses the JSON one here" in description
        assert "`exportFile`" in description and "/api/v1/growth/export.csv" in description

    def test_the_list_says_a_csv_page_is_one_page_and_where_every_row_is(self):
        operation = DOCUMENT["paths"]["/api/v1/growth"]["get"]
        assert "A page is one page, as CSV too" in operation["description"]
        assert "`/api/v1/growth/export.csv` with the same filters" in operation["description"]
        assert "rel=collection" in operation["responses"]["200"]["headers"]["Link"]["description"]

    def test_the_export_says_large_exports_are_for_curl_or_pandas(self):
        assert "Large exports are for curl or pandas" in DOCUMENT["paths"]["/api/v1/growth/export"]["get"][
            "description"]


    def test_every_operation_has_a_unique_id(self):
        ids = [item[method]["operationId"] for item in DOCUMENT["paths"].values()
               for method in item if method in HTTP_METHODS]
        assert len(ids) == len(set(ids))

    def test_every_error_body_is_the_error_schema(self):
        error = {"$ref": "#/components/schemas/Error"}
        for template, item in DOCUMENT["paths"].items():
            for method in (m for m in item if m in HTTP_METHODS):
                for code, response in item[method]["responses"].items():
                    if "$ref" in response:
                        response = DOCUMENT["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
                    if int(code) >= 400 and method != "head":
                        assert response["content"] == {"application/json": {"schema": error}}, \
                            (template, method, code)

    def test_exactly_the_writes_declare_the_bearer_scheme_and_its_401(self):
        assert DOCUMENT["security"] == [{"bearerToken": []}, {}]
        assert DOCUMENT["components"]["securitySchemes"]["bearerToken"] == {
            **DOCUMENT["components"]["securitySchemes"]["bearerToken"], "type": "http", "scheme": "bearer"}
        for template, method in document_operations():
            operation = document_operation(template, method)
            guarded = method in WRITE_METHODS
            # The writes take the document's own: optional, as a server without GROWTH_API_TOKENS takes writes
            # from anyone. Declared on them, it made a generated client's writes take an AuthenticatedClient only.
            assert operation.get("security") == (None if guarded else []), (template, method)
            assert ("401" in operation["responses"]) == guarded, (template, method)

    def test_head_is_said_once_not_listed_beside_every_get(self):
        """Swagger UI lists every operation: a HEAD beside each GET doubled the list for nothing."""
        assert all("head" not in item for item in DOCUMENT["paths"].values())
        assert "Every GET route also answers HEAD" in DOCUMENT["info"]["description"]

    def test_says_how_many_bulk_jobs_are_kept(self):
        job = DOCUMENT["paths"]["/api/v1/growth/post/status/{job}"]["get"]
        assert f"The last {JOBS_KEPT} jobs" in job["description"]
        assert f"the last {JOBS_KEPT} accepted" in job["responses"]["404"]["description"]


def test_the_app_routes_the_table(app):
    assert _app_operations(app) == table_operations()


def test_served_document_is_the_file(app):
    response = webtest.TestApp(app).get("/openapi.json")
    assert response.status_int == 200
    assert response.content_type == "application/json"
    assert response.json == DOCUMENT
    assert response.body == DOCUMENT_PATH.read_bytes()
