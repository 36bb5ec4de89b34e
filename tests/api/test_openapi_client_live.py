"""A client generated from the live /openapi.json by openapi-python-client, as a user makes one: the export, the
list and a series give each of their formats back as they are sent (a generator that reads one media type per
answer took JSON and raised JSONDecodeError on CSV and NDJSON)."""

import importlib
import pathlib
import subprocess
import sys
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


@pytest.mark.parametrize("chosen", ["CSV", "NDJSON", "JSON"])
def test_the_generated_export_gives_each_format_as_sent(live_server, generated, chosen):
    package, client = generated
    export_records = importlib.import_module(f"{PACKAGE}.api.growth.export_records")
    export_format = importlib.import_module(f"{PACKAGE}.models.export_records_format").ExportRecordsFormat
    body = export_records.sync(client=client, country="brz", format_=export_format[chosen])
    assert body == served(live_server, f"/api/v1/growth/export?country=brz&format={chosen.lower()}")
    assert body.count("NGDP_R") == 9


@pytest.mark.parametrize("chosen", ["CSV", "JSON"])
def test_the_generated_list_and_series_give_each_format_as_sent(live_server, generated, chosen):
    package, client = generated
    get_records = importlib.import_module(f"{PACKAGE}.api.growth.get_records")
    records_format = importlib.import_module(f"{PACKAGE}.models.get_records_format").GetRecordsFormat
    page = get_records.sync(client=client, limit=2, format_=records_format[chosen])
    assert page == served(live_server, f"/api/v1/growth?limit=2&format={chosen.lower()}")
    assert page.count("NGDP_R") == 2
    get_series = importlib.import_module(f"{PACKAGE}.api.growth.get_series")
    series_format = importlib.import_module(f"{PACKAGE}.models.get_series_format").GetSeriesFormat
    series = get_series.sync("brz", "ngdp_r", client=client, to=2004, format_=series_format[chosen])
    assert series == served(live_server, f"/api/v1/growth/brz/ngdp_r?to=2004&format={chosen.lower()}")
