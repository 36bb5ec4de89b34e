"""Running the rows: every scenario run after run, interleaved, its server's CPU counted; and the rows
that need a load of their own (bulk loads, reads while something writes, snapshots, memory, overload)."""

import collections
import contextlib
import re
import statistics
import sys
import threading

from growth_gevent.config import MIN_SNAPSHOT_INTERVAL

from .procfs import LOAD_CPU, cpu_seconds, memory_bytes, on_cpu
from .runners import wrk
from .scenarios import (
    FLOOD_CLIENTS,
    MIX_SCRIPT,
    READ_CONNECTIONS,
    REDIS,
    REDIS_UNCACHED,
)
from .servers import (
    RECORD_PATH,
    TIMING_POLL_SECONDS,
    fresh_server,
    load,
    logged,
    post_status,
    start,
    stop_gracefully,
    url,
)

SNAPSHOT_WRITTEN = re.compile(r"snapshot written: 42450 records .* in (\d+) ms")
SNAPSHOT_LOADED = re.compile(r"loaded 42450 records from snapshot .* in (\d+) ms")


def median_of(runs):
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def run_counting_cpu(scenario, servers, seconds, redis_pid):
    """The scenario's figures, with the CPU time that its server (all workers) and, on the Redis rows,
    redis-server spent: per request in µs (``server_cpu_us``, ``redis_cpu_us``), and as a share of one core
    while the load ran (``server_cpu_share``, ``redis_cpu_share``: near 1, that process was the limit)."""
    watched = {"server": servers[scenario.server].process.pid}
    if scenario.server in (*REDIS, REDIS_UNCACHED):
        watched["redis"] = redis_pid
    before = {name: cpu_seconds(pid) for name, pid in watched.items()}
    result = scenario.run(servers, seconds)
    loaded_seconds = result["requests"] / result["rps"]
    for name, pid in watched.items():
        spent = cpu_seconds(pid) - before[name]
        result.update({f"{name}_cpu_us": spent / result["requests"] * 1e6, f"{name}_cpu_share": spent / loaded_seconds})
    return result


def measure(scenarios, servers, runs, seconds, redis_pid, after_each=lambda server: None):
    """{scenario name: the medians of its runs, its totals summed, its ratios to other rows of the same runs}."""
    collected = {scenario.name: [] for scenario in scenarios}
    for run in range(runs):
        for scenario in scenarios:
            collected[scenario.name].append(run_counting_cpu(scenario, servers, seconds, redis_pid))
            after_each(servers[scenario.server])
        print(f"  run {run + 1}/{runs} of {len(scenarios)} scenarios done", file=sys.stderr)
    results = {}
    for scenario in scenarios:
        values = collected[scenario.name]
        results[scenario.name] = result = median_of(values)
        result.update({key: sum(value[key] for value in values) for key in scenario.totals})
        result.update({key: statistics.median(v["rps"] / b["rps"]
                                              for v, b in zip(values, collected[baseline], strict=True))
                       for key, baseline in scenario.ratios})
    return results


def repeated(measurement, runs):
    """The medians of ``runs`` runs of ``measurement()`` (each on a server of its own), wrk's errors summed."""
    values = [measurement() for _ in range(runs)]
    return {**median_of(values), "errors": sum(value["errors"] for value in values)}


def measure_bulk(server, payload, loads):
    seconds = [load(server, payload, TIMING_POLL_SECONDS) for _ in range(loads)]
    return {"median_ms": statistics.median(seconds) * 1000, "min_ms": min(seconds) * 1000,
            "max_ms": max(seconds) * 1000, "loads": loads}


def reads_during(server, writers, seconds):
    """wrk reads one record for ``seconds`` while each of ``writers`` runs again and again in a thread of
    its own; the read figures, with ``writes``: what the writers returned, all together."""
    stop = threading.Event()
    writes = []

    def repeat(writer):
        while not stop.is_set():
            writes.append(writer())

    with on_cpu(LOAD_CPU):
        threads = [threading.Thread(target=repeat, args=(writer,)) for writer in writers]
        for thread in threads:
            thread.start()
    try:
        result = wrk(url(server) + RECORD_PATH, READ_CONNECTIONS, seconds)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    result["writes"] = writes
    return result


def measure_reads_during_loads(server, payload, seconds):
    """Reads while ``payload`` is posted again and again, each load applied before the next is posted."""
    result = reads_during(server, [lambda: load(server, payload)], seconds)
    loads = result.pop("writes")
    result.update(loads_applied=len(loads), load_ms_median=statistics.median(loads) * 1000)
    return result


def measure_post_flood(payload, seconds):
    """FLOOD_CLIENTS clients POST the 500 kB-class file back to back, ignoring 503s, while one record is
    read: the read figures, the answers, and resident memory before and at its peak."""
    with fresh_server() as server:
        rss_before = memory_bytes(server.process.pid, "VmRSS")
        result = reads_during(server, [lambda: post_status(server, payload)] * FLOOD_CLIENTS, seconds)
        answers = collections.Counter(result.pop("writes"))
        posts = sum(answers.values())
        result.update(rss_before_bytes=rss_before, rss_peak_bytes=memory_bytes(server.process.pid, "VmHWM"),
                      posts=posts, answered_202=answers[202], answered_503=answers[503],
                      answered_otherwise=posts - answers[202] - answers[503], share_503=answers[503] / max(1, posts))
        return result


def measure_large_post(payload, seconds):
    """Reads while a body just under the default limit is posted and applied, one at a time; with the
    peak resident memory."""
    with fresh_server() as server:
        result = measure_reads_during_loads(server, payload, seconds)
        result.update(body_bytes=len(payload), rss_peak_bytes=memory_bytes(server.process.pid, "VmHWM"))
        return result


def measure_snapshots(payload, seconds, directory):
    """Reads and writes (the mix) while the 3 MB data is snapshotted as often as allowed; then a restart on it."""
    snapshot = str(directory / "bench.snapshot")
    with contextlib.ExitStack() as stack:
        server = start(stack, GROWTH_SNAPSHOT=snapshot, GROWTH_SNAPSHOT_INTERVAL=str(MIN_SNAPSHOT_INTERVAL))
        load(server, payload)
        result = wrk(url(server), READ_CONNECTIONS, seconds, MIX_SCRIPT)
        stop_gracefully(server)
        written = [float(m.group(1)) for m in map(SNAPSHOT_WRITTEN.search, server.lines) if m]
        loaded = logged(start(stack, GROWTH_SNAPSHOT=snapshot), SNAPSHOT_LOADED)
    result.update(snapshots_written=len(written), snapshot_write_ms_median=statistics.median(written),
                  snapshot_load_ms=float(loaded.group(1)))
    return result


def measure_rss(payload):
    with contextlib.ExitStack() as stack:
        server = start(stack)
        for _ in range(3):
            load(server, payload)
        return memory_bytes(server.process.pid, "VmRSS")
