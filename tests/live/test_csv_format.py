"""What tests/test_csv_format.py tests, where it takes a process (a server, redis-server); and every test there that
takes a store, again on Redis (tests/live/conftest.py)."""

# ruff: noqa: F405 (names from tests/test_csv_format.py)

import pandas

from tests.test_csv_format import *  # noqa: F403


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
