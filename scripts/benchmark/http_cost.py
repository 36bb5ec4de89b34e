"""What a request costs against the server's own ceiling (issue 27), this tree against another checkout
(today's main), in one run, interleaved: each round measures both trees, each tree starting half of the
rounds, every row on servers of its own tree. Rows (wrk, c=50): the ceiling (``scripts/ceiling.py``, a
fixed body on the very same server), a GET of one record, PUTs in memory and PUTs with the journal
(``GROWTH_FSYNC=always``); and, on this tree's server only, falcon's floor (``scripts/ceiling.py falcon``: the
same fixed body from a bare falcon app, one route and no middleware), what no GET through falcon can beat.
Printed: the medians of req/s, p99 and the server's CPU per request, and of the per-round ratios GET/ceiling,
falcon floor/ceiling, GET/falcon floor, PUT memory/falcon floor and PUT always/PUT memory. Alone:

    git worktree add /tmp/base-perf daa3d95
    .venv/bin/python -m scripts.benchmark.http_cost /tmp/base-perf [--rounds 5] [--seconds 5]
    .venv/bin/python -m scripts.benchmark.http_cost --profile /tmp/base-perf   # py-spy's top ten, GET
    .venv/bin/python -m scripts.benchmark.http_cost --instructions /tmp/base-perf

``--instructions`` counts the user-space instructions per request of the ceiling, the GET, the PUT (in memory,
of the one record again and again) and (this tree) the falcon floor (valgrind's callgrind over
INSTRUCTION_REQUESTS keep-alive requests on one connection, less a run of none): what no neighbour on a shared
machine moves, though the kernel's share (the ``send`` and ``recv``) is not in it.
"""

import argparse
import collections
import compileall
import contextlib
import re
import statistics
import subprocess
import sys
import tempfile

from growth_gevent.testing import LISTENING, LiveServer

from .data import ROOT
from .durable_reads import service_in
from .journal import PUT_SCRIPT, wrk_with_cpu
from .runners import GET_RECORD_SCRIPT, wrk
from .servers import JSON_HEADERS, RECORD_PATH, put_record, start, url

CEILING, FLOOR, GET = "ceiling", "falcon floor", "GET"
PUT_MEMORY, PUT_ALWAYS = "PUT memory", "PUT always"
ROWS = {CEILING: ("ceiling", "/", GET_RECORD_SCRIPT), FLOOR: ("floor", RECORD_PATH, GET_RECORD_SCRIPT),
        GET: ("memory", RECORD_PATH, GET_RECORD_SCRIPT), PUT_MEMORY: ("memory", "", PUT_SCRIPT),
        PUT_ALWAYS: ("always", "", PUT_SCRIPT)}
RATIOS = {"GET / ceiling": (GET, CEILING), "falcon floor / ceiling": (FLOOR, CEILING),
          "GET / falcon floor": (GET, FLOOR), "PUT memory / falcon floor": (PUT_MEMORY, FLOOR),
          "PUT always / PUT memory": (PUT_ALWAYS, PUT_MEMORY)}
THIS = "this"
PY_SPY = ROOT / ".venv" / "bin" / "py-spy"
PROFILE_RATE, PROFILE_SECONDS = 500, 8
TOP = 10
INSTRUCTION_REQUESTS = 2000
PUT_BODY = b'{"value": 183.26}'
VALGRIND = ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null")
VALGRIND_START_SECONDS = 120
_COLLECTED = re.compile(r"Collected : (\d+)")


def ceiling_in(tree, *app):
    return (sys.executable, f"{tree}/scripts/ceiling.py", *app)


def start_servers(stack, tree, folder, floor):
    """The tree's ceiling, its in-memory server and its journaled one (GROWTH_FSYNC=always); with ``floor``,
    falcon's floor on its server too."""
    servers = {"ceiling": start(stack, ceiling_in(tree)), "memory": start(stack, service_in(tree)),
               # Snapshots an hour apart: these rows measure the request, not a snapshot's GIL.
               "always": start(stack, service_in(tree), GROWTH_SNAPSHOT=f"{folder}/growth.snapshot",
                               GROWTH_FSYNC="always", GROWTH_SNAPSHOT_INTERVAL="3600")}
    if floor:
        servers["floor"] = start(stack, ceiling_in(tree, "falcon"))
    put_record(servers["memory"])
    return servers


def measure(trees, rounds, seconds):
    """{tree: {row: [wrk's figures with cpu_us, a round each]}}; the falcon floor in this tree only."""
    figures = {name: {row: [] for row in ROWS if row != FLOOR or name == THIS} for name in trees}
    with contextlib.ExitStack() as stack:
        servers = {name: start_servers(stack, tree, stack.enter_context(tempfile.TemporaryDirectory()), name == THIS)
                   for name, tree in trees.items()}
        for round_ in range(rounds):
            for name in trees if round_ % 2 == 0 else reversed(trees):
                for row in figures[name]:
                    server, path, script = ROWS[row]
                    figures[name][row].append(wrk_with_cpu(servers[name][server], path, script, seconds))
                print(round_ + 1, name, "  ".join(f"{row} {runs[-1]['rps']:.0f}/s {runs[-1]['cpu_us']:.1f} µs"
                                                  for row, runs in figures[name].items()), file=sys.stderr, flush=True)
    return figures


def report(figures):
    base = next(iter(figures))
    median = statistics.median
    lines = [f"{'':24}{'req/s':>9}{'p99 ms':>9}{'cpu µs':>9}{'× ' + base:>16}"]
    for row in ROWS:
        base_runs = figures[base].get(row)
        for name, runs in figures.items():
            if row not in runs:
                continue
            rps = median(run["rps"] for run in runs[row])
            against = f"{rps / median(run['rps'] for run in base_runs):>15.2f}×" if base_runs else ""
            lines.append(f"{row + ' ' + name:<24}{rps:>9.0f}{median(run['p99_us'] for run in runs[row]) / 1000:>9.1f}"
                         f"{median(run['cpu_us'] for run in runs[row]):>9.1f}{against}")
    for ratio, (row, of) in RATIOS.items():
        # By CPU also as the multiple the issues set targets in: a row's CPU a request over the other row's.
        lines.append(f"{ratio:<26}" + "   ".join(
            f"{name} {median(a['rps'] / b['rps'] for a, b in zip(runs[row], runs[of], strict=True)):.2f} (by CPU "
            f"{median(b['cpu_us'] / a['cpu_us'] for a, b in zip(runs[row], runs[of], strict=True)):.2f}, "
            f"{median(a['cpu_us'] / b['cpu_us'] for a, b in zip(runs[row], runs[of], strict=True)):.2f}×)"
            for name, runs in figures.items() if row in runs and of in runs))
    return lines


def own_time(raw):
    """py-spy's collapsed stacks (``frame;frame;... count``) as [(share, frame)], by the innermost frame."""
    counts = collections.Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            counts[stack.rpartition(";")[2]] += int(count)
    total = sum(counts.values())
    return [(count / total, frame) for frame, count in counts.most_common(TOP)]


def profile(tree, seconds):
    """py-spy's top ten (own time) in the tree's server under a wrk GET of one record at c=50."""
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as folder:
        server = start(stack, service_in(tree))
        put_record(server)
        wrk(url(server) + RECORD_PATH, 50, 1)  # warm
        recording = subprocess.Popen([str(PY_SPY), "record", "--format", "raw", "--nolineno", "-r",
                                      str(PROFILE_RATE), "-d", str(PROFILE_SECONDS), "-o", f"{folder}/raw",
                                      "--pid", str(server.process.pid)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        wrk(url(server) + RECORD_PATH, 50, seconds)
        recording.wait()
        with open(f"{folder}/raw") as raw:
            return own_time(raw.read())


def instructions(command: tuple[str, ...], path: str, requests: int, method: str = "GET") -> int:
    """User-space instructions that the server run by ``command`` executes, from start to exit, when it is
    sent ``requests`` GETs (or PUTs of the record's value) of ``path``, after one PUT of the record, on one
    keep-alive connection."""
    server = LiveServer((*VALGRIND, *command))
    server.launch()
    try:
        server.port = int(server.wait_for_line(LISTENING, VALGRIND_START_SECONDS).group(2))
        connection = server.connection(timeout=60)
        connection.request("PUT", RECORD_PATH, PUT_BODY, JSON_HEADERS)
        connection.getresponse().read()
        body, headers = (PUT_BODY, JSON_HEADERS) if method == "PUT" else (None, {})
        for _ in range(requests):
            connection.request(method, path, body, headers)
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                raise SystemExit(f"{method} {path} answered {response.status}")
        connection.close()
        server.terminate()
        server.wait_exit(VALGRIND_START_SECONDS)
    finally:
        server.stop()
    return int(next(filter(None, map(_COLLECTED.search, server.lines))).group(1))


def instructions_per_request(command: tuple[str, ...], path: str, method: str = "GET") -> float:
    return (instructions(command, path, INSTRUCTION_REQUESTS, method)
            - instructions(command, path, 0, method)) / INSTRUCTION_REQUESTS


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="a checkout of the code to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="py-spy's top ten of a GET in each tree instead")
    parser.add_argument("--instructions", action="store_true",
                        help="instructions per request of the ceiling and the GET in each tree instead (callgrind)")
    args = parser.parse_args()
    trees = {"base": args.base, THIS: str(ROOT)}
    if args.instructions:
        for name, tree in trees.items():
            # Compiled first: a module compiled during the counted run and not the empty one would be counted.
            compileall.compile_dir(f"{tree}/growth_gevent", quiet=1)
            ceiling = instructions_per_request(ceiling_in(tree), "/")
            get = instructions_per_request(service_in(tree), RECORD_PATH)
            put = instructions_per_request(service_in(tree), RECORD_PATH, "PUT")
            line = (f"{name:6}ceiling {ceiling / 1000:7.1f} k   GET {get / 1000:7.1f} k   PUT {put / 1000:7.1f} k   "
                    f"GET / ceiling {ceiling / get:.2f}")
            if name == THIS:
                floor = instructions_per_request(ceiling_in(tree, "falcon"), RECORD_PATH)
                line += (f"   falcon floor {floor / 1000:7.1f} k   floor / ceiling {ceiling / floor:.2f}   "
                         f"GET / floor {floor / get:.2f} ({get / floor:.2f}×)   PUT / floor {put / floor:.2f}×")
            print(line)
        return
    if args.profile:
        for name, tree in trees.items():
            print(name)
            print("\n".join(f"{share:6.1%}  {frame}" for share, frame in profile(tree, PROFILE_SECONDS + 2)))
        return
    print("\n".join(report(measure(trees, args.rounds, args.seconds))))


if __name__ == "__main__":
    main()
