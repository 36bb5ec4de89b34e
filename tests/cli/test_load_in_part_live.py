"""``load`` of a file sent in parts, as a process against a live server: a file loaded in part has an exit code
of its own, its progress counts the file's records, and the summary says /post/status counts the last part only."""

import json

import pytest

from growth_gevent.cli.load import PARTIAL
from scripts.generate_data import generate
from tests.helpers.cli import run_upload, size_of, url_of

# Parts of 1,000 records (the server's records per load), and room for 1,500: part 2 of a 3,000-record file is a 507.
PART_OF_3000_REFUSED = {"GROWTH_BULK_MAX_RECORDS": "1000", "GROWTH_MAX_RECORDS": "1500"}


@pytest.mark.parametrize("server", [PART_OF_3000_REFUSED], indirect=True)
@pytest.mark.parametrize("source", ["file", "stdin ndjson gzip"])
def test_a_file_loaded_in_part_has_an_exit_code_of_its_own_and_its_progress_counts_the_files_records(
        server, tmp_path, source):
    records = generate(3000, seed=14)
    if source == "file":
        bulk_file = tmp_path / "big.json"
        bulk_file.write_text(json.dumps(records))
        result = run_upload(bulk_file, "--url", url_of(server))
    else:
        result = run_upload("-", "--url", url_of(server), "--gzip",
                            input="".join(json.dumps(record) + "\n" for record in records))

    assert result.returncode == PARTIAL, result.stderr
    assert size_of(server) == 1000
    place = "record 1000" if source == "file" else "line 1001"
    assert "507 Insufficient Storage" in result.stderr
    assert f"the 1000 records before {place} were loaded" in result.stderr, result.stderr
    progress = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert progress and all(line.endswith("/3000 records") for line in progress), progress
    assert progress[-1].endswith("] 1000/3000 records")
    assert result.stdout == ("loaded 1000 of 3000 records, in part (status complete, size 1000; "
                             "/post/status counts the last part only)\n")


@pytest.mark.parametrize("server", [PART_OF_3000_REFUSED], indirect=True)
def test_of_several_files_one_loaded_in_part_is_said_per_file_and_in_the_exit_code(server, tmp_path):
    whole, parted = tmp_path / "whole.json", tmp_path / "parted.json"
    whole.write_text(json.dumps(generate(10, seed=15)))
    parted.write_text(json.dumps(generate(3000, seed=14)))

    result = run_upload(whole, parted, "--url", url_of(server), "--concurrency", "1")

    assert result.returncode == PARTIAL, result.stderr
    assert f"error: {parted}: POST " in result.stderr
    size = size_of(server)
    assert result.stdout.splitlines() == [
        f"{whole}: loaded 10 records", f"{parted}: loaded 1000 of 3000 records, in part",
        f"loaded 1010 records from 2 files (status complete, size {size}; /post/status counts the last part only)"]


@pytest.mark.parametrize("server", [{"GROWTH_BULK_MAX_RECORDS": "1000"}], indirect=True)
def test_a_file_loaded_in_parts_says_the_status_counts_its_last_part_only(server, tmp_path):
    bulk_file = tmp_path / "big.json"
    bulk_file.write_text(json.dumps(generate(3000, seed=14)))

    result = run_upload(bulk_file, "--url", url_of(server))

    assert result.returncode == 0, result.stderr
    assert result.stdout == ("loaded 3000 records (status complete, size 3000; /post/status counts the last "
                             "part only)\n")
    assert server.request_json("GET", "/api/v1/growth/post/status")[1]["total"] == 1000
