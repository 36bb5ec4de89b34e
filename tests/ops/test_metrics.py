"""/metrics counts real requests, in the Prometheus text format."""

import os
import platform
import time
import types

import pytest
import webtest
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.multiprocess import mark_process_dead

from growth_gevent import __version__
from growth_gevent.api.app import create_app
from growth_gevent.config import Config
from growth_gevent.ops.metrics import MULTIPROCESS_DIR_VARIABLE, ProcessTally, SharedTally
from tests.helpers.processes import PROCESS_METRICS, samples
from tests.helpers.recovering import opened
from tests.helpers.support import WAIT_SECONDS, applier_paused, load, memory_store, post_records

# As the OpenAPI document writes the path: a label names the route a user reads there.
RECORD_ROUTE = "/api/v1/growth/{country}/{indicator}/{year}"


@pytest.fixture
def client(store, config):
    """An app of the test's own (not the module's shared one): its counts start at zero."""
    return webtest.TestApp(create_app(store, config))


def requests_total(metrics, route, method, status):
    return metrics.get(("growth_http_requests_total",
                        (("method", method), ("route", route), ("status", str(status)))), 0)


def test_requests_are_counted_by_route_method_and_status(client):
    client.put_json("/api/v1/growth/BRZ/NGDP_R/2002", {"value": 1})
    for _ in range(3):
        client.get("/api/v1/growth/BRZ/NGDP_R/2002")
    client.get("/api/v1/growth/BRZ/NGDP_R/1999", status=404)
    client.get("/nowhere", status=404)
    metrics = samples(client)
    assert requests_total(metrics, RECORD_ROUTE, "GET", 200) == 3
    assert requests_total(metrics, RECORD_ROUTE, "GET", 404) == 1
    assert requests_total(metrics, RECORD_ROUTE, "PUT", 201) == 1
    assert requests_total(metrics, "unmatched", "GET", 404) == 1


def test_latency_is_a_histogram_per_route(client):
    for _ in range(4):
        client.get("/ping")
    metrics = samples(client)
    assert metrics[("growth_http_request_duration_seconds_count", (("route", "/ping"),))] == 4
    assert metrics[("growth_http_request_duration_seconds_bucket", (("le", "+Inf"), ("route", "/ping")))] == 4
    assert metrics[("growth_http_request_duration_seconds_sum", (("route", "/ping"),))] > 0


def test_records_and_bulk_loading_are_reported(client, store, sample_records):
    load(client, store, sample_records)
    load(client, store, sample_records[:4])
    client.delete("/api/v1/growth/BRZ/NGDP_R/2002")
    metrics = samples(client)
    assert metrics[("growth_records", ())] == 8
    assert metrics[("growth_bulk_jobs_accepted_total", ())] == 2
    assert metrics[("growth_bulk_jobs_applied_total", ())] == 2
    assert metrics[("growth_bulk_records_applied_total", ())] == 13


def test_metrics_can_be_switched_off():
    client = webtest.TestApp(create_app(memory_store(), Config(metrics=False)))
    assert client.get("/metrics", status=404).json == {"msg": "not found"}
    assert client.get("/ping").body == b"pong"


@pytest.mark.filterwarnings("ignore:Unknown REQUEST_METHOD")
def test_an_invented_method_is_counted_as_other_and_adds_no_label(client):
    for method in ("FOO", "BREW", "X" * 100):
        client.request("/ping", method=method, status=400, expect_errors=True)  # falcon: "Invalid HTTP method"
    client.request("/ping", method="OPTIONS")
    metrics = samples(client)
    assert requests_total(metrics, "/ping", "other", 400) == 3
    assert requests_total(metrics, "/ping", "OPTIONS", 200) == 1
    methods = {dict(labels).get("method") for name, labels in metrics if name == "growth_http_requests_total"}
    assert methods <= {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "other"}


def test_invented_methods_grow_nothing_the_tally_keeps():
    # The tally remembers each kind of request it has counted, to label the next one without working it out:
    # of known methods only, or a client sending invented ones would grow that memory without end.
    tally = ProcessTally()
    for number in range(1000):
        request = types.SimpleNamespace(method=f"M{number}", uri_template="/ping")
        tally.process_response(request, types.SimpleNamespace(status="400 Bad Request", status_code=400,
                                                              started=time.perf_counter()), None, False)
    assert len(tally._answered) == 0 and list(tally._histograms) == [("/ping", "other", 400)]


def test_the_bulk_queue_and_failed_jobs_are_reported(client, store):
    metrics = samples(client)
    assert metrics[("growth_bulk_records_waiting", ())] == 0
    assert metrics[("growth_bulk_jobs_failed_total", ())] == 0
    with applier_paused(store):  # on Redis the applier runs whenever a call waits, and could win the race
        post_records(client, [{"Country": "A", "Indicator": "B", "Value": 1, "Year": year} for year in range(7)])
        assert samples(client)[("growth_bulk_records_waiting", ())] == 7
    assert store.wait_idle(WAIT_SECONDS)
    assert samples(client)[("growth_bulk_records_waiting", ())] == 0


def test_writes_refused_and_the_last_snapshot_are_reported(tmp_path):
    store = opened(str(tmp_path / "growth.snapshot"))
    client = webtest.TestApp(create_app(store, Config()))
    metrics = samples(client)
    assert metrics[("growth_writes_refused", ())] == 0
    assert ("growth_snapshot_last_success_timestamp_seconds", ()) not in metrics
    store.write_log.snapshots_started(None)
    store.write_log.snapshot_failed("[Errno 28] No space left on device", refuse_writes=True)
    assert samples(client)[("growth_writes_refused", ())] == 1
    store.write_log.snapshot_written(1700000000.5)
    metrics = samples(client)
    assert metrics[("growth_writes_refused", ())] == 0
    assert metrics[("growth_snapshot_last_success_timestamp_seconds", ())] == 1700000000.5
    store.close()


# The process and the build, as prometheus-client's ProcessCollector and a build-info gauge show them.


def test_this_processs_cpu_memory_and_descriptors_are_reported(client):
    metrics = samples(client)
    for name in PROCESS_METRICS:
        assert metrics[(name, ())] > 0, name  # one process: no label
    assert metrics[("process_start_time_seconds", ())] <= time.time()
    assert metrics[("process_resident_memory_bytes", ())] > 10 * 2**20


def test_the_build_info_names_the_version_python_and_store(client, store_kind):
    metrics = samples(client)
    build = [labels for name, labels in metrics if name == "growth_build_info"]
    name = "memory" if store_kind == "journaled" else store_kind  # the memory store, its journal a setting
    assert build == [(("python", platform.python_version()), ("store", name), ("version", __version__))]
    assert metrics[("growth_build_info", build[0])] == 1


def test_under_several_workers_each_live_workers_process_is_reported_with_its_pid(store, tmp_path, monkeypatch):
    """A worker's Metrics, in the supervisor's folder; the process that runs pytest's parent stands for a
    second worker, writing its own files there as a worker does."""
    monkeypatch.setenv(MULTIPROCESS_DIR_VARIABLE, str(tmp_path))
    client = webtest.TestApp(create_app(store, Config()))
    other = os.getppid()
    SharedTally(str(tmp_path), pid=other)

    metrics = samples(client)
    assert metrics[("growth_workers", ())] == 2
    for name in PROCESS_METRICS:
        assert {dict(labels)["pid"] for sample, labels in metrics if sample == name} == {str(os.getpid()), str(other)}
    assert metrics[("process_start_time_seconds", (("pid", str(other)),))] \
        <= metrics[("process_start_time_seconds", (("pid", str(os.getpid())),))]

    mark_process_dead(other, str(tmp_path))  # what the supervisor does when a worker exits
    metrics = samples(client)
    assert metrics[("growth_workers", ())] == 1
    assert {dict(labels)["pid"] for sample, labels in metrics if sample == "process_cpu_seconds_total"} \
        == {str(os.getpid())}


def test_a_file_in_the_workers_folder_named_for_no_pid_is_no_worker(store, tmp_path, monkeypatch):
    """The folder's live-worker files are found by a glob, which a file such as ``gauge_livesum_old.db``
    matches too: it names no worker whose process could be read, and the scrape still answers."""
    monkeypatch.setenv(MULTIPROCESS_DIR_VARIABLE, str(tmp_path))
    client = webtest.TestApp(create_app(store, Config()))
    MmapedDict(str(tmp_path / "gauge_livesum_old.db")).close()

    metrics = samples(client)
    assert {dict(labels)["pid"] for sample, labels in metrics if sample == "process_cpu_seconds_total"} \
        == {str(os.getpid())}
