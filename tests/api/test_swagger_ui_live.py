"""Swagger UI at /docs in a real browser (Debian's Chromium, headless, driven by Playwright) against a live server,
as a user tries the API there: "Try it out" then "Execute" answers JSON for the list and a series (CSV was
declared first), replaces an existing record and deletes it (the document's examples of If-Match and
If-None-Match, filled in, made both a 412), sends Authorize's token to the writes of a server that asks one, and
the export warns that large exports are for curl or pandas."""

import pytest
from playwright.sync_api import expect

from growth_gevent.testing import LiveServer
from tests.helpers.support import serving_sample

TOKEN = "swagger-ui-token-0123456789"
RECORD = "/api/v1/growth/BRZ/NGDP_R/2002"  # the examples of the record's path parameters
# Generous, for a loaded machine: Swagger UI's script is 1 MB.
TIMEOUT_MS = 30_000


@pytest.fixture
def docs(chromium):
    """The /docs page of a server holding the sample, and the server."""
    with serving_sample() as server:
        context = chromium.new_context()
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(f"http://127.0.0.1:{server.port}/docs")
        yield page, server
        context.close()


def execute(page, operation_id):
    """Open the operation, "Try it out" with what the page fills in, "Execute": the status the page shows."""
    operation = page.locator(f"#operations-growth-{operation_id}")
    operation.locator(".opblock-summary").click()
    operation.get_by_role("button", name="Try it out").click()
    operation.get_by_role("button", name="Execute").click()
    status = operation.locator(".live-responses-table .response .response-col_status")
    expect(status).not_to_be_empty(timeout=TIMEOUT_MS)
    return int(status.inner_text().split()[0])


def test_try_it_out_replaces_then_deletes_an_existing_record(docs):
    page, server = docs
    assert execute(page, "putRecord") == 200
    assert execute(page, "deleteRecord") == 204
    assert server.request("GET", RECORD)[0] == 404


def test_the_export_says_large_exports_are_for_curl_or_pandas(docs):
    page, _ = docs
    operation = page.locator("#operations-growth-exportRecords")
    operation.locator(".opblock-summary").click()
    expect(operation.locator(".opblock-description-wrapper")).to_contain_text("Large exports are for curl or pandas",
                                                                                     timeout=TIMEOUT_MS)


@pytest.mark.parametrize("operation_id, shown", [("getRecords", '"items"'), ("getSeries", '"Values"')])
def test_try_it_out_answers_json_for_the_list_and_a_series(docs, operation_id, shown):
    """Swagger UI asks for the first media type a 200 declares: text/csv was, and the list answered CSV."""
    page, _ = docs
    assert execute(page, operation_id) == 200
    operation = page.locator(f"#operations-growth-{operation_id}")
    expect(operation.locator(".curl-command")).to_contain_text("accept: application/json")
    expect(operation.locator(".live-responses-table .response .response-col_description")).to_contain_text(shown)


def test_authorize_sends_the_token_to_the_writes_of_a_server_that_asks_one(chromium):
    """The bearer scheme is the document's own (optional), which the writes take: Authorize's token is sent."""
    server = LiveServer(GROWTH_API_TOKENS=TOKEN).start()
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(f"http://127.0.0.1:{server.port}/docs")
        assert execute(page, "putRecord") == 401
        page.locator(".auth-wrapper .authorize").click()
        page.locator(".auth-container input").fill(TOKEN)
        page.locator(".auth-container").get_by_role("button", name="Authorize", exact=True).click()
        page.get_by_role("button", name="Close").click()
        page.locator("#operations-growth-putRecord").get_by_role("button", name="Execute").click()
        status = page.locator("#operations-growth-putRecord .live-responses-table .response .response-col_status")
        expect(status).to_have_text("201", timeout=TIMEOUT_MS)
    finally:
        context.close()
        server.stop()
