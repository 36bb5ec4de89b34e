"""The journal's cost (issue 17): ``./scripts/bench --journal``.

Three in-memory servers, measured interleaved in each run (each run starting with another): no log (no
GROWTH_SNAPSHOT), and the journal with GROWTH_FSYNC=always and everysec. Rows: PUTs at c=50 (with the
fsyncs a second and the writes per fsync, from /metrics), GETs of one record at c=50, and the time from
a 3 MB bulk POST to its 202; each as a ratio, or a difference, to the no-log server of the same run.
"""

import contextlib
import re
import statistics
import time

from .procfs import cpu_seconds
from .runners import GET_RECORD_SCRIPT, wrk
from .servers import BULK_PATH, JSON_HEADERS, RECORD_PATH, load, put_record, settle, start, url

NO_LOG, ALWAYS, EVERYSEC = "no log", "GROWTH_FSYNC=always", "GROWTH_FSYNC=everysec"
PUT_SCRIPT = "scripts/wrk/put_records.lua"
CONNECTIONS = 50
_COUNTER = r"^{}(?:_total)? (\S+)$"


def journal_counts(server):
    """``(fsyncs, records appended)`` so far, from the server's /metrics."""
    scrape = server.request("GET", "/metrics")[1].decode()
    return tuple(float(re.search(_COUNTER.format(name), scrape, re.MULTILINE).group(1))
                 for name in ("growth_journal_fsync_duration_seconds_count", "growth_journal_records"))


def wrk_with_cpu(server, path, script, seconds):
    """wrk's figures, with ``cpu_us``: the server's CPU time per request, whatever else loads the machine."""
    before = cpu_seconds(server.process.pid)
    result = wrk(url(server) + path, CONNECTIONS, seconds, script)
    result["cpu_us"] = (cpu_seconds(server.process.pid) - before) / result["requests"] * 1e6
    return result


def bulk_202_ms(server, payload):
    """Milliseconds from sending a bulk POST to its 202; then waits until it is applied."""
    started = time.perf_counter()
    status, body = server.request("POST", BULK_PATH, payload, JSON_HEADERS)
    elapsed = (time.perf_counter() - started) * 1000
    if status != 202:
        raise SystemExit(f"bulk POST answered {status}: {body[:200]}")
    settle(server)
    return elapsed


def measure_journal(payload, runs, seconds, directory):
    with contextlib.ExitStack() as stack:
        # Snapshots an hour apart: a snapshot of 42,450 records in the pool's thread holds the GIL for a
        # few hundred ms, which the main bench measures; these rows measure the log.
        hourly = {"GROWTH_SNAPSHOT_INTERVAL": "3600"}
        servers = {NO_LOG: start(stack),
                   ALWAYS: start(stack, GROWTH_SNAPSHOT=str(directory / "always.snapshot"), **hourly),
                   EVERYSEC: start(stack, GROWTH_SNAPSHOT=str(directory / "everysec.snapshot"),
                                   GROWTH_FSYNC="everysec", **hourly)}
        for server in servers.values():
            put_record(server)
            load(server, payload)
        runs_of = {name: [] for name in servers}
        names = list(servers)
        for run in range(runs):
            # Each run starts with another server, so that what follows a row (a bulk load's freeing, the
            # previous server's last requests) weighs on each alike.
            for name in names[run % len(names):] + names[:run % len(names)]:
                server = servers[name]
                journaled = name != NO_LOG
                before = journal_counts(server) if journaled else None
                put = wrk_with_cpu(server, "", PUT_SCRIPT, seconds)
                figures = {"put_rps": put["rps"], "put_p99_us": put["p99_us"], "put_cpu_us": put["cpu_us"],
                           "errors": put["errors"]}
                if journaled:
                    counts = zip(journal_counts(server), before, strict=True)
                    fsyncs, records = (after - first for after, first in counts)
                    figures.update(fsyncs_per_second=fsyncs / seconds, writes_per_fsync=records / max(1.0, fsyncs))
                get = wrk_with_cpu(server, RECORD_PATH, GET_RECORD_SCRIPT, seconds)
                figures.update(get_rps=get["rps"], get_cpu_us=get["cpu_us"], errors=figures["errors"] + get["errors"],
                               bulk_202_ms=bulk_202_ms(server, payload))
                runs_of[name].append(figures)
    results = {}
    for name, values in runs_of.items():
        pairs = list(zip(values, runs_of[NO_LOG], strict=True))
        results[name] = {key: statistics.median(value[key] for value in values) for key in values[0]}
        results[name].update(
            errors=sum(value["errors"] for value in values),
            put_ratio=statistics.median(v["put_rps"] / b["put_rps"] for v, b in pairs),
            get_ratio=statistics.median(v["get_rps"] / b["get_rps"] for v, b in pairs),
            bulk_202_extra_ms=statistics.median(v["bulk_202_ms"] - b["bulk_202_ms"] for v, b in pairs))
    return results


def journal_lines(results):
    lines = [f"{'server':<24}{'PUT req/s':>10}{'ratio':>7}{'p99 ms':>8}{'cpu µs':>8}{'GET req/s':>10}{'ratio':>7}"
             f"{'cpu µs':>8}{'3 MB 202 ms':>12}{'+ms':>6}{'fsyncs/s':>9}{'writes/fsync':>13}{'errors':>7}"]
    for name, r in results.items():
        fsyncs = f"{r['fsyncs_per_second']:>9.0f}{r['writes_per_fsync']:>13.1f}" if "fsyncs_per_second" in r else \
            f"{'—':>9}{'—':>13}"
        lines.append(f"{name:<24}{r['put_rps']:>10.0f}{r['put_ratio']:>7.2f}{r['put_p99_us'] / 1000:>8.1f}"
                     f"{r['put_cpu_us']:>8.1f}{r['get_rps']:>10.0f}{r['get_ratio']:>7.2f}{r['get_cpu_us']:>8.1f}"
                     f"{r['bulk_202_ms']:>12.0f}"
                     f"{r['bulk_202_extra_ms']:>6.0f}{fsyncs}{r['errors']:>7.0f}")
    return lines + [f"(PUTs of 1,000 keys and GETs of one record, wrk c={CONNECTIONS}; ratios and +ms against the "
                    "no-log server in the same run, medians of the runs; cpu µs: the server's CPU time per request, "
                    "from /proc)"]


def journal_targets(results):
    always = results[ALWAYS]
    rows = [("PUT c=50, GROWTH_FSYNC=always", "≥ 0.7 × no log", f"{always['put_ratio']:.2f} ×",
             always["put_ratio"] >= 0.7),
            ("GET c=50, GROWTH_FSYNC=always", "within 5 % of no log", f"{always['get_ratio']:.2f} ×",
             abs(always["get_ratio"] - 1) <= 0.05),
            ("3 MB bulk POST → 202, GROWTH_FSYNC=always", "≤ 30 ms more than no log",
             f"{always['bulk_202_extra_ms']:+.0f} ms", always["bulk_202_extra_ms"] <= 30)]
    return ["| figure | target | measured | met |", "|---|---|---|---|",
            *[f"| {figure} | {target} | {measured} | {'yes' if met else 'no'} |"
              for figure, target, measured, met in rows]]
