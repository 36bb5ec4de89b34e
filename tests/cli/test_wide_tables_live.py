"""``growth-gevent load`` of the IMF's and the World Bank's files as published, against a real server on each
store: the records, the names, and what survives a restart."""

import subprocess
import sys
import urllib.parse

import pytest

from growth_gevent.testing import LiveServer
from tests.cli.test_load_live import run_upload, size_of, url_of
from tests.helpers import wide_files
from tests.helpers.support import ROOT, two_workers_on_redis


@pytest.fixture
def server(deployment):
    live = LiveServer(**deployment).start()
    yield live
    live.stop()


def stored(server, records):
    """The values the server holds for the keys of ``records``."""
    values = {}
    for country, indicator, year in records:
        status, body = server.request_json("GET", f"/api/v1/growth/{country}/{urllib.parse.quote(indicator)}/{year}")
        values[country, indicator, year] = body.get("Value") if status == 200 else status
    return values


def test_the_imf_and_world_bank_files_load_as_published(server, tmp_path):
    (tmp_path / "WEOOct2023all.xls").write_bytes(wide_files.weo_latin1())
    (tmp_path / "WEOApr2024all.xls").write_bytes(wide_files.weo_utf16())
    (tmp_path / "API_NY.GDP.MKTP.KD.ZG_DS2_en_csv_v2.csv").write_bytes(wide_files.world_bank_csv())
    (tmp_path / "Data_Extract_From_World_Development_Indicators.csv").write_bytes(wide_files.databank_csv())

    result = run_upload(*sorted(tmp_path.iterdir()), "--url", url_of(server), "--max-body", "200")

    assert result.returncode == 0, result.stderr
    total = len(wide_files.WEO_RECORDS) + len(wide_files.WORLD_BANK_RECORDS)
    sent = 2 * len(wide_files.WEO_RECORDS) + 2 * len(wide_files.WORLD_BANK_RECORDS)
    assert result.stdout.splitlines()[-1] == f"loaded {sent} records from 4 files (status complete, size {total})"
    assert size_of(server) == total
    assert stored(server, wide_files.WEO_RECORDS) == wide_files.WEO_RECORDS
    assert stored(server, wide_files.WORLD_BANK_RECORDS) == wide_files.WORLD_BANK_RECORDS


def test_an_unknown_wide_table_is_refused_naming_its_columns_and_nothing_is_sent(server, tmp_path):
    table = tmp_path / "table.csv"
    table.write_text("geo,series,2019\nBRA,gdp,1.5\n")

    result = run_upload(table, "--url", url_of(server))

    assert result.returncode == 1
    assert "columns found: geo, series, 2019" in result.stderr
    assert "(nothing was sent)" in result.stderr
    assert size_of(server) == 0

    named = run_upload(table, "--url", url_of(server), "--country-column", "geo", "--indicator-column", "series")
    assert named.returncode == 0, named.stderr
    assert stored(server, {("BRA", "GDP", 2019): 1.5}) == {("BRA", "GDP", 2019): 1.5}


def described(server):
    """The facets of both kinds, as the server serves them."""
    return {path: server.request_json("GET", f"/api/v1/growth/{path}")[1]["items"]
            for path in ("countries", "indicators")}


def test_the_names_the_files_give_are_served_with_the_facets(server, tmp_path):
    (tmp_path / "WEOOct2023all.xls").write_bytes(wide_files.weo_utf16())
    (tmp_path / "API_NY.GDP.MKTP.KD.ZG_DS2_en_csv_v2.csv").write_bytes(wide_files.world_bank_csv())
    (tmp_path / "Data_Extract_From_World_Development_Indicators.csv").write_bytes(wide_files.databank_csv())

    result = run_upload(*sorted(tmp_path.iterdir()), "--url", url_of(server))

    assert result.returncode == 0, result.stderr
    facets = described(server)
    assert facets["countries"] == [
        {"Country": "AFE", "name": "Africa Eastern and Southern", "records": 1, "from": 2022, "to": 2022},
        {"Country": "BRA", "name": "Brazil", "records": 7, "from": 1961, "to": 2022},
        {"Country": "CIV", "name": "Côte d'Ivoire", "records": 1, "from": 2020, "to": 2020}]
    assert facets["indicators"][0] == {"Indicator": "NGDP_R", **wide_files.WEO_INDICATORS["NGDP_R"], "records": 2,
                                       "from": 2020, "to": 2021}
    assert facets["indicators"][2] == {"Indicator": "NY.GDP.MKTP.KD.ZG", "name": "GDP growth (annual %)",
                                       "records": 3, "from": 1961, "to": 2022}


def test_an_ndjson_export_loaded_elsewhere_keeps_the_names(server, servers, tmp_path):
    weo = tmp_path / "WEOOct2023all.xls"
    weo.write_bytes(wide_files.weo_latin1())
    assert run_upload(weo, "--url", url_of(server)).returncode == 0
    exported = tmp_path / "growth.ndjson"
    with exported.open("wb") as out:
        subprocess.run([sys.executable, "-m", "growth_gevent", "export", "--format", "ndjson", "--url",
                        url_of(server)], cwd=ROOT, stdout=out, check=True, timeout=60)

    other = servers()
    result = run_upload(exported, "--url", url_of(other))

    assert result.returncode == 0, result.stderr
    assert described(other) == described(server)


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_names_survive_a_restart(store, servers, tmp_path, request):
    env = ({"GROWTH_SNAPSHOT": str(tmp_path / "growth.snapshot")} if store == "memory"
           else two_workers_on_redis(request))
    first = servers(**env)
    weo = tmp_path / "WEOOct2023all.xls"
    weo.write_bytes(wide_files.weo_latin1())
    assert run_upload(weo, "--url", url_of(first)).returncode == 0
    before = described(first)
    first.process.kill()  # kill -9: what was acknowledged is kept
    first.process.wait()

    assert described(servers(**env)) == before
