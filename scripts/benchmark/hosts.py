"""Our server against granian on the same bare falcon app (issue 38): what our HTTP layer costs a request
beyond the fastest host of the app. granian (a Rust host for Python apps, ``--interface wsgi``, one worker,
one blocking thread) and our server run ``scripts/ceiling.py``'s falcon floor; a bare gevent ``StreamServer``
answering every read with a fixed response (``scripts/ceiling.py stream``) is the floor of any server on
gevent. wrk at c=50, interleaved rounds (each round starting with another host), CPU per request from /proc
(every thread and worker process of a host). Printed: medians of req/s, p99 and CPU µs a request, and the
per-round ratios of each host's CPU per request to granian's. Alone:

    .venv/bin/python -m scripts.benchmark.hosts [--rounds 5] [--seconds 5]
"""

import argparse
import contextlib
import statistics
import subprocess
import sys

from growth_gevent.testing import START_SECONDS, LiveServer, free_port, wait_for

from .journal import wrk_with_cpu
from .procfs import SERVER_CPU, on_cpu
from .runners import GET_RECORD_SCRIPT
from .servers import CEILING as CEILING_SCRIPT
from .servers import RECORD_PATH, start, stop_gracefully

GRANIAN, OURS, STREAM = "granian", "ours", "gevent stream floor"


def granian_command(port):
    return (sys.executable, "-m", "granian", "--interface", "wsgi", "--workers", "1", "--blocking-threads", "1",
            "--host", "127.0.0.1", "--port", str(port), "--factory", "scripts.ceiling:falcon_floor_app")


def start_granian(stack):
    """granian on the server CPU with the falcon floor, once it answers (it logs on its standard output)."""
    port = free_port()
    with on_cpu(SERVER_CPU):
        server = LiveServer(granian_command(port))
        server.process_options["stdout"] = subprocess.DEVNULL
        server.launch()
    # A SIGTERM, not the harness's SIGKILL: granian's main process stops its worker only when it is asked to.
    stack.callback(stop_gracefully_or_kill, server)
    server.port = port
    wait_for(lambda: answers(server), START_SECONDS)
    return server


def stop_gracefully_or_kill(server):
    try:
        stop_gracefully(server)
    finally:
        server.stop()


def answers(server):
    try:
        return server.request("GET", RECORD_PATH)[0] == 200
    except OSError:
        return False


def measure(rounds, seconds):
    """{host: [wrk's figures with cpu_us, a round each]}."""
    figures = {GRANIAN: [], OURS: [], STREAM: []}
    with contextlib.ExitStack() as stack:
        servers = {GRANIAN: start_granian(stack), OURS: start(stack, (*CEILING_SCRIPT, "falcon")),
                   STREAM: start(stack, (*CEILING_SCRIPT, "stream"))}
        hosts = list(servers)
        for round_ in range(rounds):
            for host in hosts[round_ % len(hosts):] + hosts[:round_ % len(hosts)]:
                path = "/" if host == STREAM else RECORD_PATH
                figures[host].append(wrk_with_cpu(servers[host], path, GET_RECORD_SCRIPT, seconds))
            print(round_ + 1, "  ".join(f"{host} {runs[-1]['rps']:.0f}/s {runs[-1]['cpu_us']:.1f} µs"
                                        for host, runs in figures.items()), file=sys.stderr, flush=True)
    return figures


def report(figures):
    median = statistics.median
    lines = [f"{'':22}{'req/s':>9}{'p99 ms':>9}{'cpu µs':>9}{'cpu × granian':>15}"]
    for host, runs in figures.items():
        ratio = median(run["cpu_us"] / base["cpu_us"] for run, base in zip(runs, figures[GRANIAN], strict=True))
        rps, p99_us, cpu_us = (median(run[key] for run in runs) for key in ("rps", "p99_us", "cpu_us"))
        lines.append(f"{host:<22}{rps:>9.0f}{p99_us / 1000:>9.1f}{cpu_us:>9.1f}{ratio:>14.2f}×")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    print("\n".join(report(measure(args.rounds, args.seconds))))


if __name__ == "__main__":
    main()
