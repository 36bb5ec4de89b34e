"""A client generated from the live /openapi.json by openapi-python-client, as a user makes one: the list, a
series and the export give its typed models (JSON is declared first), the export as a file gives each format
back as text as it is sent, and the writes take the plain Client where the server asks no token."""

import importlib
import inspect
import pathlib
import subprocess
import sys
import typing
import urllib.request

import pytest

from tests.helpers.support import serving_sample

GENERATOR = pathlib.Path(sys.executable).parent / "openapi-python-client"
PACKAGE = "growth_client"


@pytest.fixture(scope="module")
def live_server():
    with serving_sample() as server:
        yield server


@pytest.fixture(scope="module")
def generated(live_server, tmp_path_factory):
    """The generated package, from the document the server serves, and a client of it on the server."""
    folder = tmp_path_factory.mktemp("client")
    subprocess.run([GENERATOR, "generate", "--url", f"http://127.0.0.1:{live_server.port}/openapi.json",
                    "--output-path", str(folder / PACKAGE), "--meta", "none"],
                   check=True, capture_output=True, timeout=120)
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(folder))
        package = importlib.import_module(PACKAGE)
        yield package, package.Client(base_url=f"http://127.0.0.1:{live_server.port}", raise_on_unexpected_status=True)
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def served(server, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=30) as response:
        return response.read().decode()


def test_the_generated_list_series_and_export_give_their_typed_models_by_default(live_server, generated):
    """JSON is declared first where a route answers it: the generator's models, not a string."""
    package, client = generated
    models = importlib.import_module(f"{PACKAGE}.models")
    get_records = importlib.import_module(f"{PACKAGE}.api.growth.get_records")
    page = get_records.sync(client=client, country="brz", limit=2)
    assert isinstance(page, models.Page)
    assert [(item.year, item.value) for item in page.items] == [(2002, 183.26), (2003, 198.274)]
    assert (page.total, page.next_) == (9, "/api/v1/growth?country=brz&limit=2&cursor=WyJCUloiLCJOR0RQX1IiLDIwMDNd")
    get_series = importlib.import_module(f"{PACKAGE}.api.growth.get_series")
    series = get_series.sync("brz", "ngdp_r", client=client, to=2003)
    assert isinstance(series, models.Series)
    assert (series.country, [value.year for value in series.values]) == ("BRZ", [2002, 2003])
    export_records = importlib.import_module(f"{PACKAGE}.api.growth.export_records")
    records = export_records.sync(client=client, country="brz")
    assert all(isinstance(record, models.Record) for record in records) and len(records) == 9


@pytest.mark.parametrize("chosen", ["CSV", "NDJSON", "JSON"])
def test_the_generated_export_file_gives_each_format_as_text_as_sent(live_server, generated, chosen):
    """A generated client asks for CSV or NDJSON by the export file's name: its own operation, text."""
    package, client = generated
    export_file = importlib.import_module(f"{PACKAGE}.api.growth.export_file")
    file_format = importlib.import_module(f"{PACKAGE}.models.export_file_format").ExportFileFormat
    body = export_file.sync(file_format[chosen], client=client, country="brz", to=2004)
    assert body == served(live_server, f"/api/v1/growth/export?country=brz&to=2004&format={chosen.lower()}")
    assert body.count("NGDP_R") == 3


def test_a_put_and_a_delete_take_the_plain_client_where_the_server_asks_no_token(live_server, generated):
    """The writes take the plain ``Client`` (typed so, as every read): ``AuthenticatedClient(token="")``, which
    their signatures required, sent ``Authorization: Bearer `` and failed."""
    package, client = generated
    put_record = importlib.import_module(f"{PACKAGE}.api.growth.put_record")
    delete_record = importlib.import_module(f"{PACKAGE}.api.growth.delete_record")
    post_records = importlib.import_module(f"{PACKAGE}.api.growth.post_records")
    for write in (put_record.sync, delete_record.sync_detailed, post_records.sync):
        assert package.Client in typing.get_args(inspect.signature(write).parameters["client"].annotation), write
    created = put_record.sync_detailed("brz", "ngdp_r", 2031, client=client, body={"value": 1.5})
    assert (created.status_code, created.parsed.country, created.parsed.value) == (201, "BRZ", 1.5)
    assert delete_record.sync_detailed("brz", "ngdp_r", 2031, client=client).status_code == 204


def test_the_generated_client_names_countries_and_indicators(live_server, generated):
    """The descriptions' PATCH through the generated client, and the facets giving them back typed: two media
    types of one schema made the generator write an optional ``body`` of a name it did not import."""
    package, client = generated
    models = importlib.import_module(f"{PACKAGE}.models")
    describe_countries = importlib.import_module(f"{PACKAGE}.api.growth.describe_countries")
    describe_indicators = importlib.import_module(f"{PACKAGE}.api.growth.describe_indicators")
    get_countries = importlib.import_module(f"{PACKAGE}.api.growth.get_countries")
    get_indicators = importlib.import_module(f"{PACKAGE}.api.growth.get_indicators")
    countries = models.CountryDescriptions.from_dict({"brz": {"name": "Brazil"}})
    assert describe_countries.sync_detailed(client=client, body=countries).status_code == 204
    indicators = models.IndicatorDescriptions.from_dict({"ngdp_r": {"name": "GDP", "units": "National currency"}})
    assert describe_indicators.sync_detailed(client=client, body=indicators).status_code == 204
    assert [(item.country, item.name) for item in get_countries.sync(client=client).items] == [("BRZ", "Brazil")]
    assert [(item.indicator, item.name, item.units) for item in get_indicators.sync(client=client).items] == [
        ("NGDP_R", "GDP", "National currency")]
