"""Prometheus metrics: requests by route and status, latency, records stored, bulk loading, snapshots, the
process (prometheus-client's ProcessCollector) and the build.

prometheus-client writes the exposition format; the counting on the request path is ours. One process
counts in plain dicts and lists (one event loop thread, nothing to lock), where the library's counter and
histogram objects take a lock per update and cost several microseconds a request. Several workers
(WEB_CONCURRENCY) count into prometheus-client's multiprocess files instead: the supervisor sets
PROMETHEUS_MULTIPROC_DIR to a folder of its own for them, each worker writes its counts to its files there
as it counts, and whichever worker a scrape reaches reads every worker's, so that each scrape shows the
service's totals rather than one worker's. The process metrics cannot be added up that way (a dead
worker's memory is not the service's): each worker marks itself live there (a ``livesum`` gauge, removed
by the supervisor when the worker exits), and a scrape reads every live worker's from /proc, labelled
with its pid.
"""

import glob
import os
import platform
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from time import perf_counter

import falcon
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.utils import floatToGoString

from ..core.version import __version__
from ..durability.journal import FSYNC_BUCKETS
from ..stores.base import BulkStatus, JournalFigures, Store, StoreUnavailable

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# prometheus-client's own variable: the folder of the multiprocess files, set by the supervisor (workers.py).
MULTIPROCESS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
# Labels come from fixed sets, so that no client can grow the scrape: any other method is "other",
# any path that no route matched "unmatched".
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})
REQUESTS = "growth_http_requests"
REQUESTS_HELP = "HTTP requests answered, by route, method and status"
REQUEST_LABELS = ("route", "method", "status")
LATENCY = "growth_http_request_duration_seconds"
LATENCY_HELP = "Time to answer a request, by route"
WORKERS = "growth_workers"
WORKERS_HELP = "Worker processes serving (WEB_CONCURRENCY's, those being restarted not counted)"
_LIVE_WORKER_FILE = re.compile(r"gauge_livesum_(\d+)\.db$")
_BOUNDS = [*map(floatToGoString, LATENCY_BUCKETS), "+Inf"]
_FSYNC_BOUNDS = [*map(floatToGoString, FSYNC_BUCKETS), "+Inf"]
# A route is counted under falcon's template and labelled, when written out, as the OpenAPI document writes its
# path: {year}, where the template says {year:year}.
_CONVERTER = re.compile(r"\{(\w+):[^}]*\}")


class ProcessTally:
    """One process's requests and latencies, in a dict of lists; its ``process_response`` is the falcon hook that
    ``Metrics`` hands over, one call a request. A request's (route, method, status) keeps its latency histogram,
    whose buckets add up to its count, and a route's histogram is the sum of its keys', both added up when
    scraped: one lookup a request."""

    def __init__(self) -> None:
        # (route, method, status) -> [count per bucket..., count over the last bucket, sum of seconds]
        self._histograms: dict[tuple[str, str, int], list[float]] = {}
        # (falcon's template, method, status) as the request left them -> (its key above, its histogram): the
        # labels worked out once per kind of request. Of known methods only, so that no client can grow it.
        self._answered: dict[tuple[str | None, str, object], tuple[tuple[str, str, int], list[float]]] = {}
        # Told of each count, with its key, bucket and seconds: a SharedTally's writes.
        self._counted: Callable[[tuple[str, str, int], int, float], None] | None = None

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        elapsed = perf_counter() - resp.started  # type: ignore[attr-defined]
        answered = self._answered.get((req.uri_template, req.method, resp.status))
        key, histogram = self._counted_as(req, resp) if answered is None else answered
        bucket = bisect_left(LATENCY_BUCKETS, elapsed)
        histogram[bucket] += 1
        histogram[-1] += elapsed
        if self._counted is not None:
            self._counted(key, bucket, elapsed)

    def _counted_as(self, req: falcon.Request, resp: falcon.Response) -> tuple[tuple[str, str, int], list[float]]:
        """The labels and histogram of a kind of request not counted under its own form yet."""
        method, template = req.method, req.uri_template
        # falcon's status_code parses the status each time: once per kind here.
        key = (template or "unmatched", method if method in KNOWN_METHODS else "other", resp.status_code)
        histogram = self._histograms.get(key)
        if histogram is None:
            histogram = self._histograms[key] = [0] * len(_BOUNDS) + [0.0]
        if method in KNOWN_METHODS:
            self._answered[template, method, resp.status] = (key, histogram)
        return key, histogram

    def processes(self) -> Iterable[Metric]:
        """This process's CPU, memory and descriptors."""
        return ProcessCollector(registry=None).collect()

    def families(self) -> Iterable[Metric]:
        requests = CounterMetricFamily(REQUESTS, REQUESTS_HELP, labels=REQUEST_LABELS)
        routes: dict[str, list[float]] = {}
        for (route, method, status), histogram in sorted(self._histograms.items()):
            requests.add_metric([_label(route), method, str(status)], sum(histogram[:-1]))
            summed = routes.setdefault(route, [0] * len(histogram))
            for index, count in enumerate(histogram):
                summed[index] += count
        latency = HistogramMetricFamily(LATENCY, LATENCY_HELP, labels=["route"])
        for route, histogram in sorted(routes.items()):
            latency.add_metric([_label(route)], _cumulative(histogram), histogram[-1])
        return [requests, latency]


class SharedTally(ProcessTally):
    """Every worker's requests and latencies. This worker counts as one process does and writes each
    count it changes to its own files in ``directory``, as prometheus-client's multiprocess mode lays them
    out (``counter_PID.db``, ``histogram_PID.db``: its MmapedDict, under its keys), but without the lock and
    pid check its value class takes per update (one thread; no fork once serving;
    docs/performance.md#metrics-across-workers). A scrape merges every worker's files, those of workers that
    exited included, so totals never go down."""

    def __init__(self, directory: str, pid: int | None = None) -> None:
        super().__init__()
        pid = os.getpid() if pid is None else pid
        self._counters = MmapedDict(os.path.join(directory, f"counter_{pid}.db"))
        self._histograms_file = MmapedDict(os.path.join(directory, f"histogram_{pid}.db"))
        # This worker is live while its file is there: the supervisor removes it (mark_process_dead).
        MmapedDict(os.path.join(directory, f"gauge_livesum_{pid}.db")).write_value(
            mmap_key(WORKERS, WORKERS, [], [], WORKERS_HELP), 1.0, 0.0)
        self._directory = directory
        self._request_keys: dict[tuple[str, str, int], str] = {}  # (route, method, status) -> its key in the files
        self._routes: dict[str, list[float]] = {}  # route -> its histogram, as the files hold it
        self._latency_keys: dict[str, list[str]] = {}  # route -> [key per bucket..., key of the sum of seconds]
        self._counted = self._write

    def _write(self, requests: tuple[str, str, int], bucket: int, elapsed: float) -> None:
        route, method, status = requests
        key = self._request_keys.get(requests)
        if key is None:
            key = self._request_keys[requests] = mmap_key(REQUESTS, REQUESTS + "_total", list(REQUEST_LABELS),
                                                          [_label(route), method, str(status)], REQUESTS_HELP)
        self._counters.write_value(key, sum(self._histograms[requests][:-1]), 0.0)
        histogram, keys = self._routes.get(route), self._latency_keys.get(route)
        if histogram is None or keys is None:
            histogram = self._routes[route] = [0] * len(_BOUNDS) + [0.0]
            keys = self._latency_keys[route] = [
                *(mmap_key(LATENCY, LATENCY + "_bucket", ["route", "le"], [_label(route), bound], LATENCY_HELP)
                  for bound in _BOUNDS),
                mmap_key(LATENCY, LATENCY + "_sum", ["route"], [_label(route)], LATENCY_HELP)]
            for bucket_key in keys:  # every bucket, the empty ones too, as a histogram has them
                self._histograms_file.write_value(bucket_key, 0.0, 0.0)
        histogram[bucket] += 1
        histogram[-1] += elapsed
        self._histograms_file.write_value(keys[bucket], histogram[bucket], 0.0)
        self._histograms_file.write_value(keys[-1], histogram[-1], 0.0)

    def processes(self) -> Iterable[Metric]:
        """Every live worker's CPU, memory and descriptors, labelled with its pid."""
        merged: dict[str, Metric] = {}
        for path in sorted(glob.glob(os.path.join(self._directory, "gauge_livesum_*.db"))):
            worker = _LIVE_WORKER_FILE.search(path)
            if worker is None:  # the glob's * takes any name: not a worker's file
                continue
            pid = worker.group(1)
            for family in ProcessCollector(pid=_constant(pid), registry=None).collect():
                into = merged.setdefault(family.name, Metric(family.name, family.documentation, family.type))
                for sample in family.samples:
                    into.add_sample(sample.name, {**sample.labels, "pid": pid}, sample.value)
        return merged.values()

    def families(self) -> Iterable[Metric]:
        return MultiProcessCollector.merge(glob.glob(os.path.join(self._directory, "*.db")))


class Metrics:
    """A falcon middleware that counts and times requests, and the ``/metrics`` resource. A request's time starts
    when its response is made: the app's response type stamps it (``started``, a ``perf_counter()``), where a
    ``process_request`` hook would cost a call per request."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._build = GaugeMetricFamily("growth_build_info", "1, labelled with the version, Python and store running",
                                        labels=["version", "python", "store"])
        self._build.add_metric([__version__, platform.python_version(), store.name], 1)
        # Read where prometheus-client's value class reads it: set by the supervisor for its workers only.
        multiprocess_dir = os.environ.get(MULTIPROCESS_DIR_VARIABLE)
        self._tally = ProcessTally() if multiprocess_dir is None else SharedTally(multiprocess_dir)
        # falcon's hook is the tally's own: one call a request.
        self.process_response = self._tally.process_response
        self._registry = CollectorRegistry()
        self._registry.register(self)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = CONTENT_TYPE_LATEST
        resp.data = generate_latest(self._registry)

    on_head = on_get

    def collect(self) -> Iterator[Metric]:
        """What a scrape reads; the store's figures are read now, so requests pay nothing for them."""
        yield from self._tally.families()
        yield from self._tally.processes()
        yield self._build
        health = self._store.health()
        yield GaugeMetricFamily("growth_writes_refused",
                                "1 while writes are refused after a failed snapshot or journal write",
                                value=0 if health.writes_refused is None else 1)
        if health.journal is not None:
            yield from _journal_metrics(health.journal)
        if health.data_losses is not None:
            yield CounterMetricFamily("growth_store_data_lost", "Times the store was found without its data "
                                      "(Redis restarted without persistence, or flushed)", value=health.data_losses)
        snapshots = health.snapshots
        if snapshots is not None and snapshots.last_success is not None:
            yield GaugeMetricFamily("growth_snapshot_last_success_timestamp_seconds",
                                    "Unix time of the last snapshot written", value=snapshots.last_success)
        status: BulkStatus | None
        size: int | None
        try:
            status, size = self._store.bulk_status(), self._store.size()
        except StoreUnavailable:
            status = size = None
        yield GaugeMetricFamily("growth_store_up", "Whether the store answered this scrape",
                                value=0 if status is None else 1)
        if status is None:
            return
        yield GaugeMetricFamily("growth_records", "Records stored", value=size)
        yield CounterMetricFamily("growth_bulk_jobs_accepted", "Bulk loads accepted", value=status.jobs_accepted)
        yield CounterMetricFamily("growth_bulk_jobs_applied", "Bulk loads applied", value=status.jobs_applied)
        yield CounterMetricFamily("growth_bulk_jobs_failed", "Bulk loads given up on (Redis: moved to the "
                                  "dead-letter key)", value=status.jobs_failed)
        yield CounterMetricFamily("growth_bulk_records_applied", "Records applied by bulk loads",
                                  value=status.records_applied)
        yield GaugeMetricFamily("growth_bulk_records_waiting", "Records accepted by bulk loads and not yet "
                                "applied (GROWTH_BULK_QUEUE_RECORDS bounds them)", value=status.records_waiting)


def _label(route: str) -> str:
    return _CONVERTER.sub(r"{\1}", route)


def _constant(value: str) -> Callable[[], str]:
    return lambda: value


def _cumulative(histogram: Sequence[float], bounds: list[str] = _BOUNDS) -> list[tuple[str, float]]:
    """Prometheus's buckets from counts by bucket (the last one past every bound; the sum after them)."""
    cumulative: float = 0
    buckets: list[tuple[str, float]] = []
    for bound, count in zip(bounds, histogram[:-1], strict=True):
        cumulative += count
        buckets.append((bound, cumulative))
    return buckets


def _journal_metrics(journal: JournalFigures) -> Iterator[Metric]:
    yield GaugeMetricFamily("growth_journal_bytes", "Bytes in the journal's segments on disk",
                            value=journal.size_bytes())
    yield CounterMetricFamily("growth_journal_records", "Records appended to the journal since start",
                              value=journal.records)
    fsyncs = HistogramMetricFamily("growth_journal_fsync_duration_seconds", "Time of each fsync of the journal")
    fsyncs.add_metric([], _cumulative(journal.fsync_histogram, _FSYNC_BOUNDS), journal.fsync_histogram[-1])
    yield fsyncs
    if journal.last_error is not None:
        at, error = journal.last_error
        last = GaugeMetricFamily("growth_journal_last_error_timestamp_seconds",
                                 "Unix time of the last journal write or fsync that failed, with its error",
                                 labels=["error"])
        last.add_metric([error], at)
        yield last
