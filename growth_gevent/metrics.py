"""Prometheus metrics: requests by route and status, latency, records stored, bulk loading, snapshots.

prometheus-client writes the exposition format; the counting on the request path is ours: plain dict
and list updates (one event loop thread, nothing to lock), where the library's counter and histogram
objects take a lock per update and cost several microseconds a request.
"""

import bisect
import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from .journal import FSYNC_BUCKETS
from .stores.base import StoreUnavailable

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# Labels come from fixed sets, so that no client can grow the scrape: any other method is "other",
# any path that no route matched "unmatched".
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})
_STARTED = "growth_gevent.started"


class Metrics:
    """A falcon middleware that counts and times requests, and the ``/metrics`` resource."""

    def __init__(self, store):
        self._store = store
        self._requests = {}  # (route, method, status) -> count
        self._latency = {}  # route -> [count per bucket..., count over the last bucket, sum of seconds]
        self._registry = CollectorRegistry()
        self._registry.register(self)

    def process_request(self, req, resp):
        req.env[_STARTED] = time.perf_counter()

    def process_response(self, req, resp, resource, req_succeeded):
        elapsed = time.perf_counter() - req.env[_STARTED]
        route = req.uri_template or "unmatched"
        method = req.method if req.method in KNOWN_METHODS else "other"
        key = (route, method, resp.status_code)
        self._requests[key] = self._requests.get(key, 0) + 1
        histogram = self._latency.get(route)
        if histogram is None:
            histogram = self._latency[route] = [0] * (len(LATENCY_BUCKETS) + 1) + [0.0]
        histogram[bisect.bisect_left(LATENCY_BUCKETS, elapsed)] += 1
        histogram[-1] += elapsed

    def on_get(self, req, resp):
        resp.content_type = CONTENT_TYPE_LATEST
        resp.data = generate_latest(self._registry)

    on_head = on_get

    def collect(self):
        """What a scrape reads; the store's figures are read now, so requests pay nothing for them."""
        requests = CounterMetricFamily("growth_http_requests", "HTTP requests answered, by route, method and status",
                                       labels=["route", "method", "status"])
        for (route, method, status), count in sorted(self._requests.items()):
            requests.add_metric([route, method, str(status)], count)
        yield requests
        latency = HistogramMetricFamily("growth_http_request_duration_seconds", "Time to answer a request, by route",
                                        labels=["route"])
        for route, histogram in sorted(self._latency.items()):
            latency.add_metric([route], _cumulative(LATENCY_BUCKETS, histogram), histogram[-1])
        yield latency
        yield GaugeMetricFamily("growth_writes_refused",
                                "1 while writes are refused after a failed snapshot or journal write",
                                value=0 if self._store.writes_refused() is None else 1)
        journal = getattr(self._store, "journal", None)  # a JournaledStore's
        if journal is not None:
            yield from _journal_metrics(journal)
        snapshots = self._store.snapshot_status()
        if snapshots is not None and snapshots["last snapshot"] is not None:
            yield GaugeMetricFamily("growth_snapshot_last_success_timestamp_seconds",
                                    "Unix time of the last snapshot written", value=snapshots["last snapshot"])
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


def _cumulative(bounds, histogram):
    """Prometheus's buckets from counts by bucket (the last one past every bound; the sum after them)."""
    cumulative, buckets = 0, []
    for bound, count in zip([*map(str, bounds), "+Inf"], histogram[:-1], strict=True):
        cumulative += count
        buckets.append((bound, cumulative))
    return buckets


def _journal_metrics(journal):
    yield GaugeMetricFamily("growth_journal_bytes", "Bytes in the journal's segments on disk", value=journal.size())
    yield CounterMetricFamily("growth_journal_records", "Records appended to the journal since start",
                              value=journal.records)
    fsyncs = HistogramMetricFamily("growth_journal_fsync_duration_seconds", "Time of each fsync of the journal")
    fsyncs.add_metric([], _cumulative(FSYNC_BUCKETS, journal.fsync_histogram), journal.fsync_histogram[-1])
    yield fsyncs
    if journal.last_error is not None:
        at, error = journal.last_error
        last = GaugeMetricFamily("growth_journal_last_error_timestamp_seconds",
                                 "Unix time of the last journal write or fsync that failed, with its error",
                                 labels=["error"])
        last.add_metric([error], at)
        yield last
