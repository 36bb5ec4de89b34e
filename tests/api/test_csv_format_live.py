"""What tests/api/test_csv_format.py tests, where it takes a process: pandas against a live server on each store,
as a user would; the names these tests share with those in process come from tests/api/test_csv_format.py."""

from urllib.parse import quote

import pandas
import requests

from tests.helpers.api import ATTACKS, evaluated


def test_pandas_reads_a_page_of_1000_records_from_the_url_and_writes_a_load(live):
    records = [{"Country": f"C{n % 7}", "Indicator": "NGDP_R" if n % 2 else "A,B", "Value": n / 7, "Year": n}
               for n in range(1200)]
    load = pandas.DataFrame(records).to_csv(index=False).encode()  # "\n" line ends, "A,B" quoted
    assert live.request("POST", "/api/v1/growth", load, {"Content-Type": "text/csv"})[0] == 202
    live.wait_until_complete()

    page = pandas.read_csv(f"http://127.0.0.1:{live.port}/api/v1/growth?format=csv&limit=1000")
    assert list(page.columns) == ["Country", "Indicator", "Value", "Year"]
    assert page.to_dict("records") == live.request_json("GET", "/api/v1/growth?limit=1000")[1]["items"]
    assert len(page) == 1000


def test_pandas_reads_every_row_where_a_csv_page_says_they_are(live):
    """A CSV page is one page: its Link says where every row is (rel="collection"), which pandas reads whole."""
    records = [{"Country": f"C{n % 7}", "Indicator": "I", "Value": n / 7, "Year": n} for n in range(250)]
    assert live.request("POST", "/api/v1/growth", pandas.DataFrame(records).to_csv(index=False).encode(),
                        {"Content-Type": "text/csv"})[0] == 202
    live.wait_until_complete()

    page = requests.get(f"http://127.0.0.1:{live.port}/api/v1/growth?format=csv&country=c1", timeout=30)
    assert page.links["collection"]["type"] == "text/csv"
    every = pandas.read_csv(f"http://127.0.0.1:{live.port}{page.links['collection']['url']}")
    assert len(every) == int(page.headers["X-Total-Count"]) == 36
    assert set(every.Country) == {"C1"}


def test_pandas_reads_formulas_as_text_and_posts_them_back_exactly(live):
    for name in ATTACKS:
        path = f"/api/v1/growth/{quote(name, safe='')}/NGDP_R/2000"
        assert live.request_json("PUT", path, {"value": -2.5})[0] in (200, 201)
    url = f"http://127.0.0.1:{live.port}/api/v1/growth?format=csv&indicator=NGDP_R&year=2000&limit=1000"
    page = pandas.read_csv(url)
    attacks = page[page.Country.isin(["'" + name for name in ATTACKS])]
    assert sorted(attacks.Country) == sorted("'" + name for name in ATTACKS)
    assert list(attacks.Value) == [-2.5] * len(ATTACKS)  # numbers stay numbers

    exported = page.to_csv(index=False).encode()
    assert evaluated(exported) == []
    for name in ATTACKS:
        assert live.request("DELETE", f"/api/v1/growth/{quote(name, safe='')}/NGDP_R/2000")[0] == 204
    assert live.request("POST", "/api/v1/growth", exported, {"Content-Type": "text/csv"})[0] == 202
    live.wait_until_complete()
    for name in ATTACKS:
        assert live.request_json("GET", f"/api/v1/growth/{quote(name, safe='')}/NGDP_R/2000")[1]["Value"] == -2.5
