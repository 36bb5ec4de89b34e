"""A client generated from the live /openapi.json by openapi-python-client, as a user makes one: the export gives
CSV and NDJSON back as they are sent (a generator that reads one media type per answer took JSON and raised
JSONDecodeError), and the list still parses to its model."""

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


def test_the_generated_list_still_parses_its_model(generated):
    package, client = generated
    get_records = importlib.import_module(f"{PACKAGE}.api.growth.get_records")
    page = get_records.sync(client=client, limit=2)
    assert (page.total, [item.year for item in page.items]) == (9, [2002, 2003])
