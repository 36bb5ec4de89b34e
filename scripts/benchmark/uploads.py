"""Uploads (issue 26): ten 1 MB bulk files with ``growth-gevent load``, one after another (``--concurrency 1``)
against the default 4 at once and all ten at once, each round timed from the command's start to its exit (every
file applied), on one in-memory worker and on two workers over Redis. The rounds are interleaved, so that noise
hits every way alike; the figures are medians, with the server's (and Redis's) CPU time per round:

    ./scripts/bench --uploads [--runs 5]
"""

import contextlib
import json
import pathlib
import resource
import statistics
import subprocess
import tempfile
import time

from growth_gevent.testing import RedisServer
from scripts.generate_data import generate

from .procfs import LOAD_CPU, cpu_seconds, on_cpu
from .servers import SERVICE, start, url

FILE_RECORDS = 14_150  # 1.0 MB as one line of JSON, as the 3 MB file is
FILES = 10
CONCURRENCIES = (1, 4, 10)
MEMORY, REDIS_TWO_WORKERS = "memory, 1 worker", "redis, 2 workers"


def make_files(folder, count):
    """``count`` files of FILE_RECORDS records, each of its own seed (their keys overlap in part)."""
    paths = []
    for index in range(count):
        path = folder / f"upload-{index}.json"
        path.write_text(json.dumps(generate(FILE_RECORDS, seed=index)))
        paths.append(path)
    return paths


def time_load(server, paths, concurrency, redis_pid):
    """One ``load`` of every file: its seconds, and the CPU seconds of the server's processes, of Redis and
    of the ``load`` command."""
    pids = (server.process.pid, redis_pid)
    cpu_before = [cpu_seconds(pid) for pid in pids]
    client_before = _children_cpu_seconds()
    started = time.perf_counter()
    with on_cpu(LOAD_CPU):
        subprocess.run([*SERVICE, "load", *map(str, paths), "--url", url(server), "--concurrency", str(concurrency)],
                       check=True, capture_output=True)
    elapsed = time.perf_counter() - started
    server_cpu, redis_cpu = (cpu_seconds(pid) - before for pid, before in zip(pids, cpu_before, strict=True))
    return {"seconds": elapsed, "server_cpu_seconds": server_cpu, "redis_cpu_seconds": redis_cpu,
            "client_cpu_seconds": _children_cpu_seconds() - client_before}


def _children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the bench's own children: the load commands
    return usage.ru_utime + usage.ru_stime


def measure_uploads(runs, count):
    """{deployment: {concurrency: medians, and the ratio of one after another's seconds to its, per round}}."""
    rounds = {label: {concurrency: [] for concurrency in CONCURRENCIES} for label in (MEMORY, REDIS_TWO_WORKERS)}
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        paths = make_files(pathlib.Path(folder), count)
        with on_cpu(LOAD_CPU):
            redis_server = RedisServer().start()
        stack.callback(redis_server.stop)
        servers = {MEMORY: start(stack),
                   REDIS_TWO_WORKERS: start(stack, GROWTH_STORE=redis_server.url, workers=2)}
        for _ in range(runs):
            for label, server in servers.items():
                for concurrency in CONCURRENCIES:
                    rounds[label][concurrency].append(time_load(server, paths, concurrency, redis_server.process.pid))
    result = {}
    for label, by_concurrency in rounds.items():
        sequential = by_concurrency[1]
        result[label] = {concurrency: {
            **{name: statistics.median(each[name] for each in measured) for name in measured[0]},
            "speedup": statistics.median(one["seconds"] / each["seconds"]
                                         for one, each in zip(sequential, measured, strict=True))}
            for concurrency, measured in by_concurrency.items()}
    return result


def upload_lines(result, count):
    lines = [f"growth-gevent load of {count} files of 1.0 MB ({FILE_RECORDS:,} records each), until all are applied:"]
    for label, by_concurrency in result.items():
        for concurrency, figures in by_concurrency.items():
            lines.append(f"  {label}, --concurrency {concurrency:>2}: {figures['seconds']:.2f} s "
                         f"({figures['speedup']:.2f} × one after another), server CPU "
                         f"{figures['server_cpu_seconds']:.2f} s, Redis CPU {figures['redis_cpu_seconds']:.2f} s, "
                         f"load's CPU {figures['client_cpu_seconds']:.2f} s")
    return lines

