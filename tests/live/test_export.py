"""What tests/test_export.py tests, where it takes a process: pandas reading the export and the CSV pages of a
live server, and a client that decodes gzip, on one process and on two workers over Redis."""

import gzip
import io
import urllib.request

import pandas
import pytest

from scripts.generate_data import generate

from support import two_workers_on_redis

EXPORTED_RECORDS = 2500  # three batches of the store's


@pytest.fixture(params=["memory", "redis, 2 workers"])
def loaded_server(request, servers):
    env = {} if request.param == "memory" else two_workers_on_redis(request)
    server = servers(**env)
    records = generate(EXPORTED_RECORDS, seed=7)
    assert server.request_json("POST", "/api/v1/growth", records)[0] == 202
    server.wait_until_complete()
    return server, records


def frame(records):
    """What pandas reads of ``records``, in the list's order."""
    frame = pandas.DataFrame(records, columns=["Country", "Indicator", "Value", "Year"])
    return frame.sort_values(["Country", "Indicator", "Year"], ignore_index=True)


def test_pandas_reads_every_record_from_the_export_and_the_count_from_a_csv_page(loaded_server):
    server, records = loaded_server
    base = f"http://127.0.0.1:{server.port}/api/v1/growth"
    expected = frame(records)
    pandas.testing.assert_frame_equal(pandas.read_csv(f"{base}/export?format=csv"), expected)
    pandas.testing.assert_frame_equal(pandas.read_json(f"{base}/export?format=ndjson", lines=True), expected)
    pandas.testing.assert_frame_equal(pandas.read_json(f"{base}/export"), expected)
    with urllib.request.urlopen(f"{base}?format=csv&limit=1000") as response:
        assert int(response.headers["X-Total-Count"]) == EXPORTED_RECORDS
        page = pandas.read_csv(response)
    pandas.testing.assert_frame_equal(page, expected[:1000])


def test_a_gzip_client_gets_the_export_streamed_and_compressed(loaded_server):
    server, records = loaded_server
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}/api/v1/growth/export?format=ndjson",
                                     headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request) as response:
        assert response.headers["Transfer-Encoding"] == "chunked"
        assert response.headers["Content-Encoding"] == "gzip"
        body = response.read()
    assert pandas.read_json(io.BytesIO(gzip.decompress(body)), lines=True).equals(frame(records))
    assert len(body) * 3 < len(gzip.decompress(body))


def test_facets_of_a_live_server_count_what_the_list_counts(loaded_server):
    server, records = loaded_server
    status, countries = server.request_json("GET", "/api/v1/growth/countries")
    assert status == 200
    counts = frame(records).groupby("Country")["Year"].agg(["count", "min", "max"])
    assert [(item["Country"], item["records"], item["from"], item["to"]) for item in countries["items"]] == [
        (name, row["count"], row["min"], row["max"]) for name, row in counts.iterrows()]
