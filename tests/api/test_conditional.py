"""HTTP conventions, in-process: ETags and conditional requests (RFC 9110 §13), the shapes a PUT takes and its
Location, and the bulk job handle; on the memory store here and on Redis in tests/api/test_conditional_live.py."""

import hashlib
import json

import gevent
import pytest

from growth_gevent.durability.identity import Identity
from growth_gevent.durability.journaled import JournalLog
from growth_gevent.stores.base import COMPLETE, FAILED, IN_PROGRESS, JOBS_KEPT, JobStatus
from growth_gevent.stores.memory import MemoryStore
from growth_gevent.testing import wait_for
from tests.helpers.api import RECORD_URL, SERIES_URL
from tests.helpers.durability import GatedFsync
from tests.helpers.recovering import opened
from tests.helpers.support import ROOT, applier_paused, load, make_store, post_records

RECORD = {"Country": "BRZ", "Indicator": "NGDP_R", "Value": 1.5, "Year": 2002}
KEY = ("BRZ", "NGDP_R", 2002)


def put(client, url, body, status, **headers):
    return client.put(url, json.dumps(body), content_type="application/json", headers=headers, status=status)


def quoted(tag):
    return f'"{tag}"'


class TestETag:
    @pytest.mark.parametrize("url", [RECORD_URL, SERIES_URL, "/api/v1/growth", "/api/v1/growth?format=csv",
                                     f"{SERIES_URL}?format=csv", "/openapi.json", "/api/v1/growth/countries",
                                     "/api/v1/growth/indicators", "/api/v1/growth/countries?indicator=NGDP_R"])
    def test_if_none_match_with_the_etag_answers_304_without_a_body(self, client, url):
        put(client, RECORD_URL, {"value": 1.5}, 201)
        response = client.get(url)
        tag = response.headers["ETag"]
        assert tag.startswith('"') and tag.endswith('"') and len(tag) > 2
        for method in ("GET", "HEAD"):
            again = client.request(url, method=method, headers={"If-None-Match": tag})
            assert again.status_int == 304
            assert again.body == b""
            assert again.headers["ETag"] == tag
        # Any of a list, and its weak form (If-None-Match compares weakly), and "*" match too.
        for header in (f'"other", {tag}', f"W/{tag}", "*"):
            assert client.get(url, headers={"If-None-Match": header}).status_int == 304, header
        assert client.get(url, headers={"If-None-Match": '"other"'}).status_int == 200

    def test_json_and_csv_of_one_page_have_different_etags(self, client):
        put(client, RECORD_URL, {"value": 1.5}, 201)
        json_tag = client.get("/api/v1/growth").headers["ETag"]
        assert client.get("/api/v1/growth?format=csv").headers["ETag"] != json_tag
        assert client.get("/api/v1/growth", headers={"Accept": "text/csv"}).headers["ETag"] != json_tag

    def test_a_record_changes_etag_with_its_value_and_the_put_answer_carries_the_new_one(self, client):
        created = put(client, RECORD_URL, {"value": 1.5}, 201)
        first = client.get(RECORD_URL).headers["ETag"]
        assert created.headers["ETag"] == first
        assert client.get("/api/v1/growth/brz/ngdp_r/2002").headers["ETag"] == first  # one record, one tag
        replaced = put(client, RECORD_URL, {"value": 2.5}, 200)
        assert replaced.headers["ETag"] != first
        assert client.get(RECORD_URL, headers={"If-None-Match": first}).status_int == 200
        assert client.get(RECORD_URL).headers["ETag"] == replaced.headers["ETag"]
        put(client, RECORD_URL, {"value": 1.5}, 200)  # the same data again: the same tag
        assert client.get(RECORD_URL).headers["ETag"] == first

    def test_a_records_etag_is_the_80_bit_blake2b_of_its_body_every_other_the_sha_256s(self, client):
        # Every worker and both stores tag one representation alike: a hash of what is sent, never a counter.
        created = put(client, RECORD_URL, {"value": 1.5}, 201)
        record = client.get(RECORD_URL)
        assert created.headers["ETag"] == record.headers["ETag"] == quoted(
            hashlib.blake2b(record.body, digest_size=10).hexdigest())
        series = client.get(SERIES_URL)
        assert series.headers["ETag"] == quoted(hashlib.sha256(series.body).hexdigest()[:20])

    def test_a_series_and_a_page_change_etag_when_a_record_they_cover_changes(self, client):
        put(client, RECORD_URL, {"value": 1.5}, 201)
        urls = [SERIES_URL, f"{SERIES_URL}?format=csv", "/api/v1/growth", "/api/v1/growth?format=csv&limit=1"]
        before = {url: client.get(url).headers["ETag"] for url in urls}
        # A year after the one shown: the CSV page of one record shows the same row, but its total and next differ.
        put(client, "/api/v1/growth/BRZ/NGDP_R/2003", {"value": 1.5}, 201)
        after = {url: client.get(url).headers["ETag"] for url in urls}
        assert all(after[url] != before[url] for url in urls), (before, after)

    def test_no_etag_on_an_error(self, client):
        response = client.get(RECORD_URL, status=404)
        assert "ETag" not in response.headers


class TestConditionalWrites:
    def test_put_with_the_current_etag_replaces_and_with_another_is_412_and_changes_nothing(self, client):
        tag = put(client, RECORD_URL, {"value": 1.5}, 201).headers["ETag"]
        stale = put(client, RECORD_URL, {"value": 2.5}, 200, **{"If-Match": tag}).headers["ETag"]
        refused = put(client, RECORD_URL, {"value": 3.5}, 412, **{"If-Match": tag})
        assert set(refused.json) == {"msg"} and "If-Match" in refused.json["msg"]
        assert client.get(RECORD_URL).json["Value"] == 2.5
        assert client.get(RECORD_URL).headers["ETag"] == stale
        # One of a list matches; a weak tag never does (If-Match compares strongly).
        put(client, RECORD_URL, {"value": 4.5}, 200, **{"If-Match": f'"other", {stale}'})
        current = client.get(RECORD_URL).headers["ETag"]
        put(client, RECORD_URL, {"value": 5.5}, 412, **{"If-Match": f"W/{current}"})

    def test_if_match_star_needs_a_record(self, client):
        put(client, RECORD_URL, {"value": 1.5}, 412, **{"If-Match": "*"})
        assert client.get(RECORD_URL, status=404)
        put(client, RECORD_URL, {"value": 1.5}, 201)
        put(client, RECORD_URL, {"value": 2.5}, 200, **{"If-Match": "*"})

    def test_if_none_match_star_creates_only(self, client):
        put(client, RECORD_URL, {"value": 1.5}, 201, **{"If-None-Match": "*"})
        refused = put(client, RECORD_URL, {"value": 2.5}, 412, **{"If-None-Match": "*"})
        assert set(refused.json) == {"msg"} and "If-None-Match" in refused.json["msg"]
        assert client.get(RECORD_URL).json["Value"] == 1.5

    def test_put_if_none_match_with_the_current_etag_is_412(self, client):
        tag = put(client, RECORD_URL, {"value": 1.5}, 201).headers["ETag"]
        put(client, RECORD_URL, {"value": 2.5}, 412, **{"If-None-Match": tag})
        put(client, RECORD_URL, {"value": 2.5}, 200, **{"If-None-Match": '"other"'})

    def test_delete_honours_if_match(self, client):
        tag = put(client, RECORD_URL, {"value": 1.5}, 201).headers["ETag"]
        put(client, RECORD_URL, {"value": 2.5}, 200)
        refused = client.delete(RECORD_URL, headers={"If-Match": tag}, status=412)
        assert set(refused.json) == {"msg"}
        assert client.get(RECORD_URL).json["Value"] == 2.5
        client.delete(RECORD_URL, headers={"If-Match": client.get(RECORD_URL).headers["ETag"]}, status=204)
        # No record: the answer without the precondition, which is not judged (RFC 9110 §13.2.1).
        client.delete(RECORD_URL, headers={"If-Match": "*"}, status=404)

    def test_delete_if_none_match_star_is_412_on_a_record(self, client):
        put(client, RECORD_URL, {"value": 1.5}, 201)
        client.delete(RECORD_URL, headers={"If-None-Match": "*"}, status=412)
        assert client.get(RECORD_URL).json["Value"] == 1.5


class TestPutShapes:
    def test_takes_value_in_either_case(self, client):
        put(client, RECORD_URL, {"value": 1.5}, 201)
        put(client, RECORD_URL, {"Value": 2.5}, 200)
        assert client.get(RECORD_URL).json["Value"] == 2.5

    def test_takes_the_record_as_get_returns_it(self, client):
        put(client, RECORD_URL, {"value": 1.5}, 201)
        record = client.get(RECORD_URL).json
        put(client, RECORD_URL, {**record, "Value": 7}, 200)
        assert client.get(RECORD_URL).json == {**record, "Value": 7}

    def test_the_records_names_match_the_url_whatever_their_case(self, client):
        put(client, "/api/v1/growth/brz/NGDP_R/2002", {**RECORD, "Country": "Brz", "Indicator": "ngdp_r"}, 201)
        assert client.get(RECORD_URL).json == RECORD

    @pytest.mark.parametrize(("field", "other", "says"), [
        ("Country", "ARG", "Country"), ("Indicator", "X", "Indicator"), ("Year", 2003, "Year"),
        ("Year", "2002", "Year"), ("Country", 5, "Country")])
    def test_a_record_that_names_another_is_422(self, client, field, other, says):
        response = put(client, RECORD_URL, {**RECORD, field: other}, 422)
        assert says in response.json["msg"]
        client.get(RECORD_URL, status=404)

    @pytest.mark.parametrize("body", [{"value": 1, "Value": 2}, {"Value": "1"}, {"Country": "BRZ"}, {"VALUE": 1}, [1]])
    def test_other_bodies_are_422(self, client, body):
        assert set(put(client, RECORD_URL, body, 422).json) == {"msg"}

    def test_a_201_carries_the_canonical_location(self, client):
        created = put(client, "/api/v1/growth/brz/a%20b%C3%A9/2002", {"value": 1}, 201)
        assert created.headers["Location"] == "/api/v1/growth/BRZ/A%20B%C3%89/2002"
        assert client.get(created.headers["Location"]).json["Value"] == 1
        assert "Location" not in put(client, "/api/v1/growth/brz/a%20b%C3%A9/2002", {"value": 2}, 200).headers


class TestBulkJobHandle:
    def test_the_202_points_at_its_job_which_answers_its_own_status(self, client, store, sample_records):
        with applier_paused(store):
            first = post_records(client, sample_records)
            second = post_records(client, sample_records[:2])
            assert first.json == second.json == {"msg": "In progress"}
            first_url, second_url = first.headers["Location"], second.headers["Location"]
            assert first_url.startswith("/api/v1/growth/post/status/") and first_url != second_url
            if store_is_redis(store):  # the memory store's applier runs only when the caller yields
                assert client.get(first_url).json == {"msg": IN_PROGRESS, "count": 0, "total": 9}
        assert store.wait_idle(10)
        assert client.get(first_url).json == {"msg": COMPLETE, "count": 9, "total": 9}
        assert client.get(second_url).json == {"msg": COMPLETE, "count": 2, "total": 2}
        assert client.head(second_url).body == b""

    def test_an_unknown_job_is_404(self, client, store):
        load(client, store, [RECORD])
        for job in ("0", "99", "-1", "x", "01", "1" * 30):
            response = client.get(f"/api/v1/growth/post/status/{job}", status=404)
            assert set(response.json) == {"msg"}, job

    def test_the_overall_status_is_unchanged(self, client, store):
        load(client, store, [RECORD])
        assert set(client.get("/api/v1/growth/post/status").json) >= {
            "msg", "test value", "count", "total", "jobs accepted", "jobs applied"}


def store_is_redis(store):
    return type(store).__name__ == "RedisStore"


class TestStoreConditions:
    """The store's side: a write's ``check`` sees the value it would replace, in the same step."""

    def test_put_and_delete_call_check_with_the_current_value_and_a_raise_writes_nothing(self, store):
        seen = []

        def refuse(current):
            seen.append(current)
            raise LookupError

        with pytest.raises(LookupError):
            store.put(KEY, 1.0, check=refuse)
        assert store.get(KEY) is None
        assert store.put(KEY, 1.0, check=seen.append) is True
        with pytest.raises(LookupError):
            store.put(KEY, 2.0, check=refuse)
        with pytest.raises(LookupError):
            store.delete(KEY, check=refuse)
        assert store.get(KEY) == 1.0
        assert store.delete(KEY, check=seen.append) is True
        assert store.delete(KEY, check=seen.append) is False
        assert seen == [None, None, 1.0, 1.0, 1.0, None]

    def test_job_status_reports_each_job_and_none_for_an_unknown_one(self, store):
        first = store.submit_bulk([(KEY, 1.0)])
        second = store.submit_bulk([(KEY, 2.0), (("A", "B", 1), 3)])
        assert first != second
        assert store.wait_idle(10)
        assert store.job_status(first) == JobStatus(COMPLETE, 1, 1)
        assert store.job_status(second) == JobStatus(COMPLETE, 2, 2)
        assert store.job_status(second + 1) is None
        assert store.job_status(0) is None

    def test_job_status_forgets_all_but_the_last_jobs_kept(self, store_kind, request, tmp_path):
        if store_kind == "redis":
            store = make_store(store_kind, request, jobs_kept=3)
        else:  # jobs_kept is an argument of the memory store's, not a setting
            journal = JournalLog(str(tmp_path / "growth.snapshot"), "always") if store_kind == "journaled" else None
            store = MemoryStore(chunk_size=4, queue_records=100, max_records=100, jobs_kept=3, write_log=journal)
            if journal is not None:
                journal.recover(0, Identity())
        try:
            jobs = [store.submit_bulk([(KEY, value)]) for value in range(5)]
            assert store.wait_idle(10)
            assert [store.job_status(job) is not None for job in jobs] == [False, False, True, True, True]
        finally:
            store.close()


def test_states_are_named_as_the_overall_status_names_them_and_the_api_page_says_how_many_jobs_are_kept():
    assert (IN_PROGRESS, COMPLETE, FAILED) == ("in progress", "complete", "failed")
    assert f"older than the last {JOBS_KEPT} accepted" in (ROOT / "docs" / "api.md").read_text()


def test_the_journaled_stores_job_numbers_hold_across_a_restart(tmp_path):
    path = str(tmp_path / "growth.snapshot")
    store = opened(path)
    job = store.submit_bulk([(("A", "B", year), year) for year in range(5)])
    store.close()  # the applier stops before applying anything: the process died
    again = opened(path)
    try:
        assert again.wait_idle(5)
        assert again.job_status(job) == JobStatus(COMPLETE, 5, 5)
        assert again.submit_bulk([(KEY, 1)]) > job  # no number names two jobs
    finally:
        again.close()


def test_under_fsync_always_a_conditional_write_judges_the_value_in_memory_in_the_step_of_its_write(
        tmp_path, monkeypatch):
    """Reads wait for the writes in flight they cover (GROWTH_FSYNC=always); a write's check must not, or
    another write could come between the check and the write."""
    store = opened(str(tmp_path / "growth.snapshot"))
    store.put(KEY, 1.0)
    fsync = GatedFsync(monkeypatch)
    try:
        first = gevent.spawn(store.put, KEY, 2.0)
        fsync.wait_until_waiting()  # 2.0 in memory, its fsync held
        seen = []
        second = gevent.spawn(store.put, KEY, 3.0, check=seen.append)
        wait_for(lambda: gevent.sleep(0.001) or seen)
        assert seen == [2.0]
        assert store.copy()["BRZ"]["NGDP_R"][2002] == 3.0  # written in the step of its check
        fsync.allow(10)
        assert (first.get(timeout=5), second.get(timeout=5)) == (False, False)
    finally:
        fsync.allow(100)
        store.close()
