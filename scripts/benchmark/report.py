"""What the bench prints and writes: the tables, the projection per core count, the targets judged, the
PNG chart, and the block of docs/performance.md that --update-docs rewrites."""

import dataclasses
import math
import os
import pathlib
import re
import sys

from growth_gevent.config import MIN_SNAPSHOT_INTERVAL

from .data import ROOT
from .paging import paging_line
from .procfs import PINNED
from .scenarios import (
    AB_ROW,
    FLOOD_CLIENTS,
    GATED_K6_ROWS,
    GET_BASELINE,
    KEEPALIVE_ROW,
    MEMORY,
    MEMORY_MIX,
    MIX_ROW,
    REDIS,
    REDIS_UNCACHED,
    mix_row,
)


def ms(microseconds):
    return microseconds / 1000


def mib(size):
    return size / 2 ** 20


def optional(result, key, spec):
    """``result[key]`` formatted, or a dash for a figure that the row does not have."""
    return format(result[key], spec) if key in result else "—"


def cpu_columns(r):
    """Server CPU µs per request and share of a core; redis-server's µs per request, on the Redis rows."""
    return f"{r['server_cpu_us']:>8.1f}{r['server_cpu_share']:>6.0%}{optional(r, 'redis_cpu_us', '.1f'):>9}"


CPU_HEADINGS = f"{'cpu µs':>8}{'cpu':>6}{'redis µs':>9}"
CPU_NOTE = ("cpu µs: the server's CPU time per request, all its workers together, and cpu: its share of one core "
            "while the load ran; redis µs: redis-server's CPU time per request")


def http_table(results):
    lines = [(f"{'scenario':<58}{'req/s':>8}{'ratio':>7}{'to mem':>7}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}"
              f"{'errors':>7}{CPU_HEADINGS}")]
    for name, r in results.items():
        lines.append(f"{name:<58}{r['rps']:>8.0f}{optional(r, 'ratio_to_ceiling', '.2f'):>7}"
                     f"{optional(r, 'ratio_to_memory', '.2f'):>7}{ms(r['p50_us']):>8.2f}{ms(r['p99_us']):>8.2f}"
                     f"{ms(r['max_us']):>8.2f}{r['errors']:>7.0f}{cpu_columns(r)}")
    return lines + [(f"(ratio: to the ceiling; to mem: to the same load on the in-memory server ({GET_BASELINE} for "
                     f"the in-memory rows); both of the same run; {CPU_NOTE})")]


def k6_table(results, runs):
    """One line per k6 row; the trends of tagged requests and of custom metrics on lines of their own."""
    lines = [(f"{'k6 scenario':<56}{'req/s':>8}{'to mem':>8}{'med ms':>8}{'p95 ms':>8}{'p99 ms':>8}"
              f"{'failed':>8}{'thresholds':>14}{CPU_HEADINGS}")]
    for name, r in results.items():
        ratio = f"{r['ratio_to_memory']:.2f}" if "ratio_to_memory" in r else "—"
        verdict = ("held" if not r["runs_crossed"] else f"crossed {r['runs_crossed']:.0f}/{runs}") + (
            "" if name in GATED_K6_ROWS else "*")
        lines.append(f"{name:<56}{r['rps']:>8.0f}{ratio:>8}{r['http_req_duration med']:>8.2f}"
                     f"{r['http_req_duration p(95)']:>8.2f}{r['http_req_duration p(99)']:>8.2f}"
                     f"{r['failed_rate']:>8.2%}{verdict:>14}{cpu_columns(r)}")
        trends = sorted({key.rsplit(" ", 1)[0] for key in r if " " in key} - {"http_req_duration"})
        lines += [f"  {trend:<54}{'':>16}{r[f'{trend} med']:>8.2f}{r[f'{trend} p(95)']:>8.2f}"
                  f"{r[f'{trend} p(99)']:>8.2f}" for trend in trends]
    return lines + [(f"(to mem: to the in-memory challenge mix of the same run; thresholds: in how many of {runs} "
                     "runs; *: reported, not a target: a load past the script's own, or the challenge's thresholds; "
                     f"{CPU_NOTE})")]


def figure_lines(results):
    reads, snapshots, flood, large = (results[key] for key in ("reads_during_loads", "snapshots", "post_flood",
                                                               "large_post"))
    lines = [f"3 MB bulk POST -> status complete, {label}: median {bulk['median_ms']:.1f} ms "
             f"(min {bulk['min_ms']:.1f}, max {bulk['max_ms']:.1f}, {bulk['loads']} loads)"
             for label, bulk in results["bulk"].items()]
    return lines + [
        (f"reads while 3 MB loads are applied back to back ({reads['loads_applied']} loads): "
         f"p99 {ms(reads['p99_us']):.2f} ms, max {ms(reads['max_us']):.2f} ms, {reads['rps']:.0f} req/s, "
         f"{reads['errors']} errors"),
        (f"reads/updates while 42,450 records are snapshotted every {MIN_SNAPSHOT_INTERVAL:g} s "
         f"({snapshots['snapshots_written']} snapshots, {snapshots['snapshot_write_ms_median']:.0f} ms each): "
         f"p99 {ms(snapshots['p99_us']):.2f} ms, "
         f"max {ms(snapshots['max_us']):.2f} ms, {snapshots['rps']:.0f} req/s, {snapshots['errors']} errors"),
        f"start-up on that snapshot: 42,450 records loaded in {snapshots['snapshot_load_ms']:.0f} ms",
        f"resident memory after three 3 MB loads: {mib(results['rss_after_three_loads_bytes']):.1f} MiB",
        (f"POST flood, {FLOOD_CLIENTS} clients posting 500 kB back to back for {results['flood_seconds']} s: "
         f"{flood['posts']:.0f} posts a run ({flood['answered_202']:.0f} × 202, {flood['answered_503']:.0f} × 503, "
         f"{flood['answered_otherwise']:.0f} otherwise), {flood['share_503']:.1%} answered 503; peak RSS "
         f"{mib(flood['rss_peak_bytes']):.1f} MiB (from {mib(flood['rss_before_bytes']):.1f}); reads meanwhile: "
         f"p99 {ms(flood['p99_us']):.2f} ms, max {ms(flood['max_us']):.2f} ms, {flood['rps']:.0f} req/s, "
         f"{flood['errors']} errors"),
        (f"reads while {mib(large['body_bytes']):.1f} MiB bodies are posted and applied one at a time "
         f"({large['loads_applied']:.0f} loads a run, {large['load_ms_median']:.0f} ms each to complete): "
         f"p99 {ms(large['p99_us']):.2f} ms, max {ms(large['max_us']):.2f} ms, {large['rps']:.0f} req/s, "
         f"{large['errors']} errors; peak RSS {mib(large['rss_peak_bytes']):.1f} MiB"),
        paging_line(results["paging"]),
    ]


PROJECTED_CORES = (1, 2, 4, 8)


@dataclasses.dataclass(frozen=True)
class Projected:
    """A load whose CPU per request is projected: its in-memory row and a Redis, 1 worker row of the same
    load (``section`` and ``row`` name them in the results), ``store`` naming that Redis row's setup."""
    load: str
    section: str
    memory_row: str
    redis_row: str
    store: str = "Redis"

    def rows(self, results):
        return results[self.section][self.memory_row], results[self.section][self.redis_row]


PROJECTED = [
    Projected("GET one record (wrk)", "http", GET_BASELINE, f"{REDIS[0]}: {GET_BASELINE}"),
    Projected("read/update mix (wrk)", "http", MIX_ROW, f"{REDIS[0]}: {MIX_ROW}"),
    Projected("challenge mix (k6)", "k6", MEMORY_MIX, mix_row(REDIS[0])),
    Projected("GET one record (wrk)", "http", GET_BASELINE, f"{REDIS_UNCACHED}: {GET_BASELINE}", "Redis, no cache"),
]


def per_second(cpu_us):
    """Requests a second that a core serves at ``cpu_us`` each; unbounded when a short run spent less than
    /proc's clock tick (10 ms), as redis-server can on the cached rows."""
    return 1e6 / cpu_us if cpu_us else math.inf


def projection_lines(results):
    """Throughput per core count, on paper, from the CPU per request measured: the in-memory store is one
    process, so one core whatever the machine; the Redis store's workers add up, one core each, until
    redis-server (single-threaded) fills its own core."""
    lines = [f"{'projected req/s, by worker cores':<46}" + "".join(f"{cores:>9}" for cores in PROJECTED_CORES)
             + f"{'Redis core full at':>20}"]
    shown = set()
    for projected in PROJECTED:
        memory, redis_row = projected.rows(results)
        if projected.load not in shown:
            shown.add(projected.load)
            lines.append(f"{projected.load + ', in-memory':<46}"
                         + f"{1e6 / memory['server_cpu_us']:>9.0f}" * len(PROJECTED_CORES))
        per_core, redis_limit = 1e6 / redis_row["server_cpu_us"], per_second(redis_row["redis_cpu_us"])
        lines.append(f"{projected.load + ', ' + projected.store:<46}"
                     + "".join(f"{min(cores * per_core, redis_limit):>9.0f}" for cores in PROJECTED_CORES)
                     + f"{redis_limit / per_core:>11.0f} cores")
    return lines + [("(1e6 / cpu µs of the in-memory row and of the Redis, 1 worker row; a worker core each, Redis on "
                     "a core of its own, the load generated elsewhere; Redis full: 1e6 / its redis µs. These loads "
                     "read one record again and again, which the Redis rows serve from the worker's cache until it "
                     "is written; the no-cache row asks Redis every time)")]


@dataclasses.dataclass(frozen=True)
class Target:
    """A figure and its target: ``value(results)`` is what was measured (a number, or a tuple of them),
    ``shown`` formats it, ``met(value)`` says whether it meets the target (None: no number is set)."""
    figure: str
    target: str
    value: object
    shown: str
    met: object = None


def http_row(name, key):
    return lambda results: results["http"][name][key]


def crossed_rows(results):
    return ", ".join(f"{name}: {results['k6'][name]['runs_crossed']:.0f}×" for name in sorted(GATED_K6_ROWS)
                     if results["k6"][name]["runs_crossed"])


def reads(row):
    """The p99 and max in ms of the reads of ``row``."""
    return lambda results: (ms(results[row]["p99_us"]), ms(results[row]["max_us"]))


def redis_cpu_ratio(projected):
    """Server CPU per request on Redis, 1 worker, over in-memory, of the :class:`Projected` load."""
    def value(results):
        memory, redis_row = projected.rows(results)
        return redis_row["server_cpu_us"] / memory["server_cpu_us"]
    return value


def ab_failures(result):
    return result["non_2xx"], result["failed"]


TARGETS = [
    Target(GET_BASELINE, "≥ 0.9 × ceiling", http_row(GET_BASELINE, "ratio_to_ceiling"), "{:.2f} ×",
           lambda ratio: ratio >= 0.9),
    Target("keep-alive latency, one connection", "median < 0.5 ms",
           lambda r: ms(r["http"][KEEPALIVE_ROW]["p50_us"]), "{:.2f} ms", lambda median: median < 0.5),
    Target("p99 GET at c=50", "< 20 ms", lambda r: ms(r["http"][GET_BASELINE]["p99_us"]), "{:.2f} ms",
           lambda p99: p99 < 20),
    Target("cost of /metrics on the hot GET", "small (no number set)",
           lambda r: 1 - r["http"][GET_BASELINE]["rps"] / r["http"]["GET one record, c=50, GROWTH_METRICS=off"]["rps"],
           "{:.0%} of throughput"),
    Target("1000 connections", "0 errors", http_row("GET one record, c=1000", "errors"), "{:.0f} errors",
           lambda errors: errors == 0),
    Target("Redis, 1 worker: GET one record", "≥ 0.8 × in-memory",
           http_row(f"{REDIS[0]}: {GET_BASELINE}", "ratio_to_memory"), "{:.2f} ×", lambda ratio: ratio >= 0.8),
    Target("Redis, 1 worker: challenge k6 mix", "≥ 0.8 × in-memory",
           lambda r: r["k6"][mix_row(REDIS[0])]["ratio_to_memory"], "{:.2f} ×", lambda ratio: ratio >= 0.8),
    # Throughput ratios only hold while the server is the limit; CPU per request holds whatever the limit.
    *[Target(f"Redis, 1 worker: server CPU per request, {projected.load}", "≤ 1.25 × in-memory",
             redis_cpu_ratio(projected), "{:.2f} ×", lambda ratio: ratio <= 1.25)
      for projected in PROJECTED if projected.store == "Redis"],
    Target(f"{REDIS[-1]}: {AB_ROW}", "0 non-2xx, 0 failed", lambda r: ab_failures(r["http"][f"{REDIS[-1]}: {AB_ROW}"]),
           "{:.0f} non-2xx, {:.0f} failed", lambda counts: counts == (0, 0)),
    Target("k6 scripts' thresholds, at their loads", "held in every run", lambda r: crossed_rows(r) or "held", "{}",
           lambda crossed: crossed == "held"),
    Target("3 MB bulk POST → status complete", "≤ 100 ms median", lambda r: r["bulk"][MEMORY]["median_ms"],
           "{:.0f} ms", lambda median: median <= 100),
    Target("reads while bulk loads are applied", "p99 < 100 ms, max < 250 ms", reads("reads_during_loads"),
           "p99 {:.0f} ms, max {:.0f} ms", lambda p99_max: p99_max[0] < 100 and p99_max[1] < 250),
    Target("RSS after three 3 MB loads", "≤ 60 MB",
           lambda r: (mib(r["rss_after_three_loads_bytes"]), r["rss_after_three_loads_bytes"] / 1e6),
           "{:.1f} MiB ({:.1f} MB)", lambda mib_mb: mib_mb[1] <= 60),
    Target(f"POST flood ({FLOOD_CLIENTS} clients, 500 kB): peak RSS", "≤ 256 MiB",
           lambda r: mib(r["post_flood"]["rss_peak_bytes"]), "{:.0f} MiB", lambda peak: peak <= 256),
    Target("POST flood: reads meanwhile", "p99 < 100 ms, 0 errors",
           lambda r: (ms(r["post_flood"]["p99_us"]), r["post_flood"]["errors"]), "p99 {:.0f} ms, {:.0f} errors",
           lambda p99_errors: p99_errors[0] < 100 and p99_errors[1] == 0),
    # Posted back to back, the parse is running most of the time: its stall is the max.
    Target("reads while 8 MiB bodies are posted", "max < 250 ms", reads("large_post"),
           "p99 {:.0f} ms, max {:.0f} ms", lambda p99_max: p99_max[1] < 250),
]


def targets_table(results):
    """The targets as a Markdown table, with what was measured and whether it meets them."""
    rows = ["| figure | target | measured | met |", "|---|---|---|---|"]
    for target in TARGETS:
        value = target.value(results)
        shown = target.shown.format(*value) if isinstance(value, tuple) else target.shown.format(value)
        met = "—" if target.met is None else "yes" if target.met(value) else "no"
        rows.append(f"| {target.figure} | {target.target} | {shown} | {met} |")
    return rows


def update_docs(lines, targets, heading, marker="bench"):
    page = ROOT / "docs" / "performance.md"
    block = "\n".join([f"<!-- {marker} -->", heading, "", "```text", *lines, "```", "", *targets,
                       f"<!-- /{marker} -->"])
    text = re.sub(f"<!-- {marker} -->.*<!-- /{marker} -->", lambda _: block, page.read_text(), flags=re.DOTALL)
    page.write_text(text)


def write_chart(http_results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(http_results)
    figure, (throughput, latency) = plt.subplots(1, 2, figsize=(11, 4))
    throughput.barh(names, [http_results[n]["rps"] for n in names], color="tab:blue")
    throughput.set_xlabel("requests per second (median)")
    throughput.invert_yaxis()
    for index, name in enumerate(names):
        ratio = optional(http_results[name], "ratio_to_ceiling", ".2f")
        throughput.text(http_results[name]["rps"], index, f" {ratio}×",
                        va="center", fontsize=8)
    for offset, (key, label) in enumerate((("p50_us", "p50"), ("p90_us", "p90"), ("p99_us", "p99"))):
        latency.barh([i + offset * 0.27 for i in range(len(names))],
                     [http_results[n][key] / 1000 for n in names], height=0.27, label=label)
    latency.set_yticks([i + 0.27 for i in range(len(names))], [""] * len(names))
    latency.invert_yaxis()
    latency.set_xscale("log")
    latency.set_xlabel("latency, ms (log)")
    latency.legend()
    figure.suptitle("growth-gevent: throughput (ratio to the bare-pywsgi ceiling) and latency")
    figure.tight_layout()
    figure.savefig(path, dpi=80)


def machine():
    model = next((line.split(":", 1)[1].strip() for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown CPU")
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    return (f"{os.cpu_count()} × {model}, {memory:.0f} GiB, Python {sys.version.split()[0]}"
            f"{', servers on one CPU, wrk, k6 and redis-server on the other' if PINNED else ''}"
            " (a shared, noisy machine)")
