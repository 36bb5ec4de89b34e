"""Benchmarks: starts the servers, drives them with wrk, prints a table, writes JSON and a PNG chart.

    ./scripts/bench [--runs 3] [--seconds 5] [--out bench-results]

Every figure is the median of several runs. The machine is shared and noisy, so each throughput is also
given as a ratio to the stack's ceiling measured in the same run: a bare WSGI app with a fixed body on
the very same server setup (scripts/ceiling.py). With two or more CPUs the server is pinned to one and
wrk to another, so that the load generator does not steal the server's core.

The Redis store is measured too, with WEB_CONCURRENCY=1 and 2, against a redis-server of the bench's own
on a free loopback port, without persistence; its throughputs are also given as a ratio to the in-memory
GET of the same run.
"""

import argparse
import contextlib
import http.client
import json
import os
import pathlib
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import redis

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "growth-3mb.json"
RECORD_PATH = "/api/v1/growth/BRZ/NGDP_R/2002"
SERIES_PATH = "/api/v1/growth/BRZ/NGDP_R"
SLICE_PATH = "/api/v1/growth?country=BRZ&limit=100"
LISTENING = re.compile(r"listening on http://[\d.]+:(\d+)")
SNAPSHOT_WRITTEN = re.compile(r"snapshot written: 42450 records .* in (\d+) ms")
SNAPSHOT_LOADED = re.compile(r"loaded 42450 records from snapshot .* in (\d+) ms")
PINNED = (os.cpu_count() or 1) >= 2 and subprocess.run(["which", "taskset"], capture_output=True).returncode == 0
# Every server, all its workers included, is pinned to CPU 0 and wrk to CPU 1. redis-server goes with wrk on
# CPU 1: on CPU 0 it would take its own work out of the one core that the in-memory rows have to
# themselves, and the ratio would no longer be what the store costs our process (in production Redis
# runs elsewhere; its work is small next to wrk's). With 2 CPUs and wrk on one, WEB_CONCURRENCY=2 cannot
# show scaling: its rows give what a second process costs on the same core.
REDIS_CPU = 1
REDIS_WORKERS = (1, 2)
REDIS_START_SECONDS = 10
GET_BASELINE = "GET one record, c=50"


def pinned(command, cpu):
    return ["taskset", "-c", str(cpu), *command] if PINNED else command


class _Process:
    """A child process of the bench (``self.process``), stopped with SIGTERM, also as a context manager."""

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()


class Server(_Process):
    """A server process on a free loopback port, pinned to CPU 0."""

    def __init__(self, command, **env):
        self.process = subprocess.Popen(
            pinned(command, 0), cwd=ROOT, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "HOST": "127.0.0.1", "PORT": "0", **env})
        self.lines = []
        waiting = int(env.get("WEB_CONCURRENCY", 1))  # every worker logs its own "listening on"
        for line in self.process.stderr:
            self.lines.append(line)
            match = LISTENING.search(line)
            if match:
                self.port = int(match.group(1))
                waiting -= 1
                if not waiting:
                    break
        else:
            raise SystemExit(f"{command} did not start: {''.join(self.lines)}")
        threading.Thread(target=lambda: self.lines.extend(self.process.stderr), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.port}"

    def request(self, method, path, body=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        connection.close()
        return response.status, data

    def status(self):
        return json.loads(self.request("GET", "/api/v1/growth/post/status")[1])

    def load(self, payload):
        """POST a bulk payload and poll until it is applied; return the seconds from POST to complete."""
        started = time.perf_counter()
        status, body = self.request("POST", "/api/v1/growth", payload)
        if status != 202:
            raise SystemExit(f"bulk POST answered {status}: {body[:200]}")
        jobs = self.status()["jobs accepted"]
        while True:
            status = self.status()
            if status["msg"] == "complete" and status["jobs applied"] >= jobs:
                return time.perf_counter() - started

    def rss_bytes(self):
        server_pid = self.process.pid
        for line in pathlib.Path(f"/proc/{server_pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise SystemExit("no VmRSS")


class RedisServer(_Process):
    """A redis-server of our own on a free loopback port, without persistence; one database per scenario."""

    def __init__(self):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.process = subprocess.Popen(
            pinned(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no"], REDIS_CPU), stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + REDIS_START_SECONDS
        while True:
            try:
                with redis.Redis(port=self.port, socket_timeout=1) as client:
                    client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise SystemExit(f"redis-server did not start on port {self.port}") from None
                time.sleep(0.01)

    def url(self, db):
        return f"redis://127.0.0.1:{self.port}/{db}"

    def flush(self, db):
        with redis.Redis(port=self.port, db=db, socket_timeout=5) as client:
            client.flushdb()


def redis_backed(redis_server, workers):
    """Our server with WEB_CONCURRENCY=workers on the Redis store, in a database of its own and empty.

    A database each: the servers run side by side, and the workers of one would otherwise help apply
    the other's bulk loads. Flushed, because redis-server loads a dump.rdb it finds in its directory.
    """
    redis_server.flush(workers)
    return Server([sys.executable, "-m", "growth_gevent"], GROWTH_STORE=redis_server.url(workers),
                  WEB_CONCURRENCY=str(workers))


def redis_label(workers):
    return f"Redis, {workers} worker{'s' if workers > 1 else ''}"


def wrk(url, connections, seconds, script="scripts/wrk/get_record.lua"):
    threads = min(connections, 2 if connections >= 100 else 1)
    command = pinned(["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--timeout", "5s",
                      "-s", script, url], 1)
    output = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    result = json.loads(output.strip().splitlines()[-1])
    result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
    result["errors"] = sum(result[k] for k in ("connect_errors", "read_errors", "write_errors",
                                                "status_errors", "timeouts"))
    return result


def median_of(runs):
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def measure_http(ours, without_metrics, ceiling, redis_servers, runs, seconds):
    """``redis_servers``: {label: server}; each gets the GET and the mix rows, named after its label."""
    record_url = ours.url + RECORD_PATH
    scenarios = {
        "ceiling: bare WSGI, c=50": lambda: wrk(ceiling.url + "/", 50, seconds),
        "GET one record, c=1 (keep-alive latency)": lambda: wrk(record_url, 1, seconds),
        GET_BASELINE: lambda: wrk(record_url, 50, seconds),
        "GET one record, c=50, GROWTH_METRICS=off": lambda: wrk(without_metrics.url + RECORD_PATH, 50, seconds),
        "read/update mix, c=50": lambda: wrk(ours.url, 50, seconds, "scripts/wrk/read_update.lua"),
        "GET a series, c=50": lambda: wrk(ours.url + SERIES_PATH, 50, seconds),
        "GET a country slice (100 records), c=50": lambda: wrk(ours.url + SLICE_PATH, 50, seconds),
    }
    for label, server in redis_servers.items():
        scenarios[f"{label}: {GET_BASELINE}"] = lambda server=server: wrk(server.url + RECORD_PATH, 50, seconds)
        scenarios[f"{label}: read/update mix, c=50"] = lambda server=server: wrk(
            server.url, 50, seconds, "scripts/wrk/read_update.lua")
    # c=1000 last: closing a thousand connections keeps the server busy for a moment afterwards.
    scenarios["GET one record, c=1000"] = lambda: wrk(record_url, 1000, seconds)
    collected = {name: [] for name in scenarios}
    for run in range(runs):
        for name, scenario in scenarios.items():  # interleaved, so that noise hits every scenario alike
            collected[name].append(scenario())
        print(f"  http run {run + 1}/{runs} done", file=sys.stderr)
    results = {name: median_of(values) for name, values in collected.items()}
    for name, values in collected.items():
        results[name]["errors"] = sum(v["errors"] for v in values)
        for key, baseline in (("ratio_to_ceiling", "ceiling: bare WSGI, c=50"), ("ratio_to_memory_get", GET_BASELINE)):
            results[name][key] = statistics.median(v["rps"] / b["rps"] for v, b in zip(values, collected[baseline]))
    return results


def measure_bulk(ours, payload, loads):
    seconds = [ours.load(payload) for _ in range(loads)]
    return {"median_ms": statistics.median(seconds) * 1000, "min_ms": min(seconds) * 1000,
            "max_ms": max(seconds) * 1000, "loads": loads}


def measure_reads_during_loads(ours, payload, seconds):
    """wrk reads one record while 3 MB loads are posted back to back for the whole window."""
    stop = threading.Event()
    loads = []

    def load_repeatedly():
        while not stop.is_set():
            loads.append(ours.load(payload))

    loader = threading.Thread(target=load_repeatedly)
    loader.start()
    try:
        result = wrk(ours.url + RECORD_PATH, 10, seconds)
    finally:
        stop.set()
        loader.join()
    result["loads_applied"] = len(loads)
    return result


def measure_snapshots(payload, seconds, directory):
    """Reads and writes (the mix) while the 3 MB data is snapshotted every 0.2 s; then a restart on it."""
    snapshot = str(directory / "bench.snapshot")
    server = Server([sys.executable, "-m", "growth_gevent"], GROWTH_SNAPSHOT=snapshot,
                    GROWTH_SNAPSHOT_INTERVAL="0.2")
    try:
        server.load(payload)
        result = wrk(server.url, 10, seconds, "scripts/wrk/read_update.lua")
        written = [float(m.group(1)) for m in map(SNAPSHOT_WRITTEN.search, server.lines) if m]
    finally:
        server.stop()
    restarted = Server([sys.executable, "-m", "growth_gevent"], GROWTH_SNAPSHOT=snapshot)
    restarted.stop()
    loaded = next(m for m in map(SNAPSHOT_LOADED.search, restarted.lines) if m)
    result.update(snapshots_written=len(written), snapshot_write_ms_median=statistics.median(written),
                  snapshot_load_ms=float(loaded.group(1)))
    return result


def measure_rss(payload):
    fresh = Server([sys.executable, "-m", "growth_gevent"])
    try:
        for _ in range(3):
            fresh.load(payload)
        return fresh.rss_bytes()
    finally:
        fresh.stop()


def report(http_results, bulks, reads, snapshots, rss):
    """The table as text lines, and the targets of issue #3 with what was measured.

    ``bulks``: {store label: measure_bulk()}, the in-memory store's under "in-memory".
    """
    lines = [f"{'scenario':<44}{'req/s':>9}{'ratio':>7}{'to mem':>8}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}"
             f"{'errors':>8}"]
    for name, r in http_results.items():
        lines.append(f"{name:<44}{r['rps']:>9.0f}{r['ratio_to_ceiling']:>7.2f}{r['ratio_to_memory_get']:>8.2f}"
                     f"{r['p50_us'] / 1000:>9.2f}{r['p99_us'] / 1000:>9.2f}{r['max_us'] / 1000:>9.2f}"
                     f"{r['errors']:>8.0f}")
    lines += [f"(ratio: to the ceiling; to mem: to the in-memory {GET_BASELINE}; both of the same run)", ""]
    lines += [f"3 MB bulk POST -> status complete, {label}: median {bulk['median_ms']:.1f} ms "
              f"(min {bulk['min_ms']:.1f}, max {bulk['max_ms']:.1f}, {bulk['loads']} loads)"
              for label, bulk in bulks.items()]
    lines += [
        f"reads while 3 MB loads are applied back to back ({reads['loads_applied']} loads): "
        f"p99 {reads['p99_us'] / 1000:.2f} ms, max {reads['max_us'] / 1000:.2f} ms, "
        f"{reads['rps']:.0f} req/s, {reads['errors']} errors",
        f"reads/updates while 42,450 records are snapshotted every 0.2 s ({snapshots['snapshots_written']} "
        f"snapshots, {snapshots['snapshot_write_ms_median']:.0f} ms each): p99 {snapshots['p99_us'] / 1000:.2f} ms, "
        f"max {snapshots['max_us'] / 1000:.2f} ms, {snapshots['rps']:.0f} req/s, {snapshots['errors']} errors",
        f"start-up on that snapshot: 42,450 records loaded in {snapshots['snapshot_load_ms']:.0f} ms",
        f"resident memory after three 3 MB loads: {rss / 2 ** 20:.1f} MiB",
    ]
    get50 = http_results[GET_BASELINE]
    bulk = bulks["in-memory"]
    single = http_results["GET one record, c=1 (keep-alive latency)"]
    thousand = http_results["GET one record, c=1000"]

    def row(figure, target, measured, met):
        verdict = "—" if met is None else "yes" if met else "no"
        return f"| {figure} | {target} | {measured} | {verdict} |"

    targets = [
        "| figure | target | measured | met |", "|---|---|---|---|",
        row("GET one record, c=50", "≥ 0.9 × ceiling", f"{get50['ratio_to_ceiling']:.2f} ×",
            get50["ratio_to_ceiling"] >= 0.9),
        row("keep-alive latency, one connection", "median < 0.5 ms", f"{single['p50_us'] / 1000:.2f} ms",
            single["p50_us"] < 500),
        row("p99 GET at c=50", "< 20 ms", f"{get50['p99_us'] / 1000:.2f} ms", get50["p99_us"] < 20000),
        row("cost of /metrics on the hot GET", "small (no number set)",
            f"{1 - get50['rps'] / http_results['GET one record, c=50, GROWTH_METRICS=off']['rps']:.0%} of throughput",
            None),
        row("1000 connections", "0 errors", f"{thousand['errors']:.0f} errors", thousand["errors"] == 0),
        row("3 MB bulk POST → status complete", "≤ 100 ms median", f"{bulk['median_ms']:.0f} ms",
            bulk["median_ms"] <= 100),
        row("reads while bulk loads are applied", "p99 < 100 ms, max < 250 ms",
            f"p99 {reads['p99_us'] / 1000:.0f} ms, max {reads['max_us'] / 1000:.0f} ms",
            reads["p99_us"] < 100000 and reads["max_us"] < 250000),
        row("RSS after three 3 MB loads", "≤ 60 MB", f"{rss / 2 ** 20:.1f} MiB ({rss / 1e6:.1f} MB)", rss <= 60e6),
    ]
    return lines, targets


def update_readme(lines, targets, heading):
    readme = ROOT / "README.md"
    block = "\n".join(["<!-- bench -->", heading, "", "```text", *lines, "```", "", *targets, "<!-- /bench -->"])
    text = re.sub(r"<!-- bench -->.*<!-- /bench -->", lambda _: block, readme.read_text(), flags=re.S)
    readme.write_text(text)


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
        throughput.text(http_results[name]["rps"], index, f" {http_results[name]['ratio_to_ceiling']:.2f}×",
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
            f"{', server and wrk pinned to separate CPUs, redis-server with wrk' if PINNED else ''}"
            " (a shared, noisy machine)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--bulk-loads", type=int, default=5)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench-results")
    parser.add_argument("--update-readme", action="store_true",
                        help="write the table and the targets into README.md between its bench markers")
    args = parser.parse_args()
    if not DATA.exists():
        subprocess.run([sys.executable, "scripts/generate_data.py", str(DATA)], cwd=ROOT, check=True)
    payload = DATA.read_bytes()

    # An ExitStack, so that whatever started is stopped, redis-server last, also when a start fails.
    with contextlib.ExitStack() as running:
        redis_server = running.enter_context(RedisServer())
        ours = running.enter_context(Server([sys.executable, "-m", "growth_gevent"]))
        without_metrics = running.enter_context(Server([sys.executable, "-m", "growth_gevent"], GROWTH_METRICS="off"))
        ceiling = running.enter_context(Server([sys.executable, "scripts/ceiling.py"]))
        redis_servers = {redis_label(workers): running.enter_context(redis_backed(redis_server, workers))
                         for workers in REDIS_WORKERS}
        for server in (ours, without_metrics, *redis_servers.values()):
            server.load(payload)
        http_results = measure_http(ours, without_metrics, ceiling, redis_servers, args.runs, args.seconds)
        bulks = {label: measure_bulk(server, payload, args.bulk_loads)
                 for label, server in {"in-memory": ours, **redis_servers}.items()}
        reads = measure_reads_during_loads(ours, payload, args.seconds)
    with tempfile.TemporaryDirectory() as directory:
        snapshots = measure_snapshots(payload, args.seconds, pathlib.Path(directory))
    rss = measure_rss(payload)

    lines, targets = report(http_results, bulks, reads, snapshots, rss)
    print("\n" + "\n".join(lines) + "\n\n" + "\n".join(targets))
    args.out.mkdir(parents=True, exist_ok=True)
    report_header = {"date": time.strftime("%Y-%m-%d"), "machine": machine()}
    results = {**report_header, "pinned": PINNED, "runs": args.runs, "seconds": args.seconds,
               "http": http_results, "bulk": bulks, "reads_during_loads": reads, "snapshots": snapshots,
               "rss_bytes_after_three_loads": rss}
    (args.out / "bench.json").write_text(json.dumps(results, indent=2))
    write_chart(http_results, args.out / "bench.png")
    print(f"\nwrote {args.out / 'bench.json'} and {args.out / 'bench.png'}")
    if args.update_readme:
        update_readme(lines, targets, f"Measured {report_header['date']} with `./scripts/bench --update-readme` on "
                                      f"{report_header['machine']}:")
        print("updated the figures in README.md")


if __name__ == "__main__":
    main()
