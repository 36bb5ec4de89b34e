"""What bulk loads leave behind (issue 46): this tree against another checkout, interleaved. Each round starts a
fresh in-memory server of each tree (each tree first every other round), reads its idle RSS, times the first
load of the file from POST to applied (and the server's CPU time meanwhile, its status polls included, from
the scheduler's nanosecond count), loads it LOADS times in all and reads the RSS again. Printed: the medians
of the rounds. Alone:

    .venv/bin/python -m scripts.benchmark.load_memory /tmp/base-perf [--rounds 5] [--loads 5] [--file FILE]
"""

import argparse
import contextlib
import pathlib
import statistics
import sys

from .data import DATA_3MB, ROOT, make_data_files
from .durable_reads import service_in
from .procfs import memory_bytes
from .servers import TIMING_POLL_SECONDS, load, start

THIS = "this"
MiB = 2 ** 20


def run_seconds(pid: int) -> float:
    """The CPU time of every thread of process ``pid`` so far, to the nanosecond (``/proc``'s schedstat), where
    ``stat`` counts in ticks of 10 ms."""
    return sum(int((task / "schedstat").read_text().split()[0])
               for task in pathlib.Path(f"/proc/{pid}/task").iterdir()) / 1e9


def measure_once(tree: str, payload: bytes, loads: int) -> dict[str, float]:
    with contextlib.ExitStack() as stack:
        server = start(stack, service_in(tree))
        idle = memory_bytes(server.process.pid, "VmRSS")
        cpu_before = run_seconds(server.process.pid)
        first = load(server, payload, TIMING_POLL_SECONDS)
        first_cpu = run_seconds(server.process.pid) - cpu_before
        for _ in range(loads - 1):
            load(server, payload, TIMING_POLL_SECONDS)
        return {"idle_mib": idle / MiB, "first_load_ms": first * 1000, "first_load_cpu_ms": first_cpu * 1000,
                "rss_after_mib": memory_bytes(server.process.pid, "VmRSS") / MiB}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="a checkout of the code to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--file", help="the bulk body to load (default: the bench's 3 MB-class file)")
    args = parser.parse_args()
    if args.file is None:
        make_data_files()
    with open(args.file or DATA_3MB, "rb") as body:
        payload = body.read()
    trees = {"base": args.base, THIS: str(ROOT)}
    figures: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for round_ in range(args.rounds):
        for name in trees if round_ % 2 == 0 else reversed(list(trees)):
            figures[name].append(measure_once(trees[name], payload, args.loads))
            print(round_ + 1, name, figures[name][-1], file=sys.stderr, flush=True)
    print(f"{'':6}{'idle MiB':>10}{'first load ms':>15}{'its CPU ms':>12}{f'RSS after {args.loads} MiB':>18}")
    for name, runs in figures.items():
        idle, first, cpu, after = (statistics.median(run[key] for run in runs)
                                   for key in ("idle_mib", "first_load_ms", "first_load_cpu_ms", "rss_after_mib"))
        print(f"{name:6}{idle:>10.1f}{first:>15.1f}{cpu:>12.1f}{after:>18.1f}")


if __name__ == "__main__":
    main()
