"""What gzip costs against what it saves, per level, on the bodies the service sends (issue 26): a JSON and a
CSV page of 100 and 1,000 records of the 42,450-record file, a series, /openapi.json. CPU time is the median
of ``--rounds`` rounds of gzip.compress on this machine, in process. Alone:

    .venv/bin/python -m scripts.benchmark.gzip_levels [--rounds 200]
"""

import argparse
import gzip
import json
import statistics
import time

import webtest

from growth_gevent.api.app import create_app
from growth_gevent.config import Config
from growth_gevent.stores.memory import MemoryStore

from .data import DATA_3MB, make_data_files

LEVELS = (1, 6, 9)
BODIES = {
    "page of 100, JSON": "/api/v1/growth",
    "page of 1,000, JSON": "/api/v1/growth?limit=1000",
    "page of 1,000, CSV": "/api/v1/growth?limit=1000&format=csv",
    "series": "/api/v1/growth/BRZ/NGDP_R",
    "/openapi.json": "/openapi.json",
}


def bodies():
    store = MemoryStore(chunk_size=100_000, queue_records=100_000, max_records=100_000)
    records = json.loads(DATA_3MB.read_bytes())
    store.submit_bulk([((r["Country"], r["Indicator"], r["Year"]), r["Value"]) for r in records])
    store.wait_idle(60)
    client = webtest.TestApp(create_app(store, Config()))
    return {name: client.get(path).body for name, path in BODIES.items()}


def measure(rounds):
    rows = []
    for name, body in bodies().items():
        for level in LEVELS:
            times = []
            for _ in range(rounds):
                start = time.perf_counter()
                packed = gzip.compress(body, level, mtime=0)
                times.append(time.perf_counter() - start)
            rows.append((name, len(body), level, len(packed), statistics.median(times) * 1e6))
    return rows


def main():
    parser = argparse.ArgumentParser(prog="python -m scripts.benchmark.gzip_levels", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    make_data_files()
    print("| body | bytes | level | gzipped | ratio | CPU µs | µs per kB saved |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, size, level, packed, micros in measure(args.rounds):
        print(f"| {name} | {size:,} | {level} | {packed:,} | {size / packed:.1f}× | {micros:.0f} | "
              f"{micros / ((size - packed) / 1000):.2f} |")


if __name__ == "__main__":
    main()
