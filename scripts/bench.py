"""Benchmarks: starts the servers, drives them with wrk, prints a table, writes JSON and a PNG chart.

    ./scripts/bench [--runs 3] [--seconds 5] [--out bench-results]

Every figure is the median of several runs. The machine is shared and noisy, so each throughput is also
given as a ratio to the stack's ceiling measured in the same run: a bare WSGI app with a fixed body on
the very same server setup (scripts/ceiling.py). With two or more CPUs the server is pinned to one and
wrk to another, so that the load generator does not steal the server's core.
"""

import argparse
import http.client
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "growth-3mb.json"
RECORD_PATH = "/api/v1/growth/BRZ/NGDP_R/2002"
LISTENING = re.compile(r"listening on http://[\d.]+:(\d+)")
PINNED = (os.cpu_count() or 1) >= 2 and subprocess.run(["which", "taskset"], capture_output=True).returncode == 0


def pinned(command, cpu):
    return ["taskset", "-c", str(cpu), *command] if PINNED else command


class Server:
    """A server process on a free loopback port, pinned to CPU 0."""

    def __init__(self, command, **env):
        self.process = subprocess.Popen(
            pinned(command, 0), cwd=ROOT, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "HOST": "127.0.0.1", "PORT": "0", **env})
        for line in self.process.stderr:
            match = LISTENING.search(line)
            if match:
                self.port = int(match.group(1))
                break
        else:
            raise SystemExit(f"{command} did not start")
        threading.Thread(target=self.process.stderr.read, daemon=True).start()
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

    def stop(self):
        self.process.terminate()
        self.process.wait(30)


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


def measure_http(ours, ceiling, runs, seconds):
    record_url = ours.url + RECORD_PATH
    # c=1000 last: closing a thousand connections keeps the server busy for a moment afterwards.
    scenarios = {
        "ceiling: bare WSGI, c=50": lambda: wrk(ceiling.url + "/", 50, seconds),
        "GET one record, c=1 (keep-alive latency)": lambda: wrk(record_url, 1, seconds),
        "GET one record, c=50": lambda: wrk(record_url, 50, seconds),
        "read/update mix, c=50": lambda: wrk(ours.url, 50, seconds, "scripts/wrk/read_update.lua"),
        "GET one record, c=1000": lambda: wrk(record_url, 1000, seconds),
    }
    collected = {name: [] for name in scenarios}
    for run in range(runs):
        for name, scenario in scenarios.items():  # interleaved, so that noise hits every scenario alike
            collected[name].append(scenario())
        print(f"  http run {run + 1}/{runs} done", file=sys.stderr)
    results = {name: median_of(values) for name, values in collected.items()}
    for name, values in collected.items():
        results[name]["errors"] = sum(v["errors"] for v in values)
        results[name]["ratio_to_ceiling"] = statistics.median(
            v["rps"] / c["rps"] for v, c in zip(values, collected["ceiling: bare WSGI, c=50"]))
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


def measure_rss(payload):
    fresh = Server([sys.executable, "-m", "growth_gevent"])
    try:
        for _ in range(3):
            fresh.load(payload)
        return fresh.rss_bytes()
    finally:
        fresh.stop()


def print_table(http_results, bulk, reads, rss):
    print(f"\n{'scenario':<44}{'req/s':>9}{'ratio':>7}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'errors':>8}")
    for name, r in http_results.items():
        print(f"{name:<44}{r['rps']:>9.0f}{r['ratio_to_ceiling']:>7.2f}{r['p50_us'] / 1000:>9.2f}"
              f"{r['p99_us'] / 1000:>9.2f}{r['max_us'] / 1000:>9.2f}{r['errors']:>8.0f}")
    print(f"\n3 MB bulk POST -> status complete: median {bulk['median_ms']:.1f} ms "
          f"(min {bulk['min_ms']:.1f}, max {bulk['max_ms']:.1f}, {bulk['loads']} loads)")
    print(f"reads while 3 MB loads are applied back to back ({reads['loads_applied']} loads): "
          f"p99 {reads['p99_us'] / 1000:.2f} ms, max {reads['max_us'] / 1000:.2f} ms, "
          f"{reads['rps']:.0f} req/s, {reads['errors']} errors")
    print(f"resident memory after three 3 MB loads: {rss / 2 ** 20:.1f} MiB")


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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--bulk-loads", type=int, default=5)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench-results")
    args = parser.parse_args()
    if not DATA.exists():
        subprocess.run([sys.executable, "scripts/generate_data.py", str(DATA)], cwd=ROOT, check=True)
    payload = DATA.read_bytes()

    ours = Server([sys.executable, "-m", "growth_gevent"])
    ceiling = Server([sys.executable, "scripts/ceiling.py"])
    try:
        ours.load(payload)
        http_results = measure_http(ours, ceiling, args.runs, args.seconds)
        bulk = measure_bulk(ours, payload, args.bulk_loads)
        reads = measure_reads_during_loads(ours, payload, args.seconds)
    finally:
        ours.stop()
        ceiling.stop()
    rss = measure_rss(payload)

    print_table(http_results, bulk, reads, rss)
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "pinned": PINNED,
              "runs": args.runs, "seconds": args.seconds, "http": http_results, "bulk": bulk,
              "reads_during_loads": reads, "rss_bytes_after_three_loads": rss}
    (args.out / "bench.json").write_text(json.dumps(report, indent=2))
    write_chart(http_results, args.out / "bench.png")
    print(f"\nwrote {args.out / 'bench.json'} and {args.out / 'bench.png'}")


if __name__ == "__main__":
    main()
