"""``./scripts/bench``: start the servers, measure every row, print the tables, write JSON and the chart."""

import argparse
import contextlib
import json
import pathlib
import resource
import tempfile
import time

from growth_gevent.testing import RedisServer
from scripts import benchmark

from .data import DATA_3MB, DATA_500KB, DATA_LARGE, ROOT, make_data_files
from .facets import facet_lines
from .failover import failover_lines, measure_failover
from .journal import journal_lines, journal_targets, measure_journal
from .measure import (
    measure,
    measure_bulk,
    measure_large_post,
    measure_post_flood,
    measure_reads_during_loads,
    measure_rss,
    measure_snapshots,
    repeated,
)
from .paging import measure_paging
from .procfs import LOAD_CPU, PINNED, on_cpu
from .report import (
    figure_lines,
    http_table,
    k6_table,
    machine,
    projection_lines,
    targets_table,
    update_docs,
    write_chart,
)
from .scenarios import (
    BARE,
    BULK_SCENARIOS,
    HTTP_SCENARIOS,
    K6,
    MEMORY,
    NO_METRICS,
    REDIS,
    REDIS_UNCACHED,
    REDIS_WORKERS,
)
from .servers import CEILING, load, settle, start
from .uploads import FILES, measure_uploads, upload_lines


def main():
    parser = argparse.ArgumentParser(prog="./scripts/bench", description=benchmark.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--flood-seconds", type=int, default=15)
    parser.add_argument("--bulk-loads", type=int, default=5)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench-results")
    parser.add_argument("--journal", action="store_true",
                        help="measure only what the journal costs (scripts/benchmark/journal.py)")
    parser.add_argument("--uploads", action="store_true",
                        help="measure only `growth-gevent load` of ten 1 MB files one after another against at once "
                             "(scripts/benchmark/uploads.py)")
    parser.add_argument("--failover", action="store_true",
                        help="measure only Redis behind Sentinel: PUTs with GROWTH_REDIS_MIN_REPLICAS=0 and 1, and "
                             "a kill -9 of the primary (scripts/benchmark/failover.py)")
    parser.add_argument("--facets", action="store_true",
                        help="measure only GET /size beside a client looping on a facet or a range list, at the record "
                             "cap, on both stores (scripts/benchmark/facets.py)")
    parser.add_argument("--update-docs", action="store_true",
                        help="write the tables and the targets into docs/performance.md between its bench markers")
    args = parser.parse_args()
    if args.uploads:
        print("\n".join(upload_lines(measure_uploads(args.runs, FILES), FILES)))
        return
    if args.facets:
        for text in facet_lines(args.seconds, with_redis=True):
            print(text, flush=True)
        return
    make_data_files()
    payload = DATA_3MB.read_bytes()
    if args.journal:
        return journal_only(payload, args)
    if args.failover:
        return failover_only(args)
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
        for db, (workers, label) in enumerate(zip(REDIS_WORKERS, REDIS, strict=True), start=1):
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
    results["paging"] = measure_paging(payload, args.runs, args.seconds)
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


def journal_only(payload, args):
    with tempfile.TemporaryDirectory() as directory:
        results = measure_journal(payload, args.runs, args.seconds, pathlib.Path(directory))
    lines, targets = journal_lines(results), journal_targets(results)
    print("\n" + "\n".join(lines) + "\n\n" + "\n".join(targets))
    if args.update_docs:
        update_docs(lines, targets, f"Measured {time.strftime('%Y-%m-%d')} with `./scripts/bench --journal "
                                    f"--update-docs` on {machine()}:", marker="journal bench")
        print("updated the journal's figures in docs/performance.md")


def failover_only(args):
    lines = failover_lines(measure_failover(args.runs, args.seconds))
    print("\n" + "\n".join(lines))
    if args.update_docs:
        update_docs(lines, [], f"Measured {time.strftime('%Y-%m-%d')} with `./scripts/bench --failover "
                               f"--update-docs` on {machine()}:", marker="failover bench")
        print("updated the failover figures in docs/performance.md")


if __name__ == "__main__":
    main()
