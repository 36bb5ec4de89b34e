"""Facets and year-range lists beside everyone else (issue 34): a server holding one of SHAPES, one client
looping on a facet or a range list, and another client's ``GET /size`` req/s and p99 watched meanwhile,
against ``/size`` alone in the same run. On the in-memory store, and on Redis with ``--redis``. Part of
./scripts/bench (``--facets``: both stores), or alone:

    .venv/bin/python -m scripts.benchmark.facets [--seconds 5] [--redis] [--shape NAME ...]
"""

import argparse
import contextlib
import http.client
import json
import statistics
import threading
import time

from growth_gevent.config import DEFAULT_MAX_RECORDS
from growth_gevent.testing import RedisServer

from .procfs import LOAD_CPU, on_cpu
from .runners import wrk
from .servers import load, start, url

SIZE_PATH = "/api/v1/growth/size"
LOOPED = {"/countries": "/api/v1/growth/countries", "/indicators": "/api/v1/growth/indicators",
          "range list": "/api/v1/growth?from=1990&to=2010&limit=1"}
SIZE_CONNECTIONS = 10
# Records a bulk POST of the load holds: ~3.5 MB, under the default body limit and bulk record cap.
POST_RECORDS = 50_000


def single_record_series(records=500_000):
    """The record cap's worth of series of one record each: 1,000 countries x 500 indicators."""
    return [{"Country": f"C{n // 500:04}", "Indicator": f"I{n % 500:03}", "Value": n, "Year": 1980 + n % 41}
            for n in range(records)]


def generated_shape(records=1_000_000):
    """Series of 41 years (1980-2020), as scripts/generate_data.py makes them, up to ``records``: 610
    countries x 40 indicators."""
    rows = []
    for series in range(-(-records // 41)):
        country, indicator = f"C{series // 40:03}", f"I{series % 40:02}"
        rows += [{"Country": country, "Indicator": indicator, "Value": year, "Year": year}
                 for year in range(1980, 2021)]
    return rows[:records]


SHAPES = {"500k single-record series": single_record_series, "1M records, 41-year series": generated_shape}


def loop(address, path, stop, latencies):
    """GET ``path`` one after another until ``stop`` is set; each one's seconds into ``latencies``."""
    host, port = address
    connection = http.client.HTTPConnection(host, port, timeout=60)
    while not stop.is_set():
        started = time.perf_counter()
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"GET {path} answered {response.status}")
        latencies.append(time.perf_counter() - started)
    connection.close()


def size_beside(server, path, seconds):
    """wrk's GET /size figures while one client loops on ``path``, and that client's own."""
    stop, latencies = threading.Event(), []
    with on_cpu(LOAD_CPU):
        looper = threading.Thread(target=loop, args=(("127.0.0.1", server.port), path, stop, latencies))
    looper.start()
    try:
        size = wrk(url(server) + SIZE_PATH, SIZE_CONNECTIONS, seconds)
    finally:
        stop.set()
        looper.join()
    return size, latencies


def measure(shape, seconds, store_env):
    """The rows of one server holding ``shape``, loaded by bulk POSTs of POST_RECORDS each."""
    records = SHAPES[shape]()
    with contextlib.ExitStack() as stack:
        server = start(stack, GROWTH_MAX_RECORDS=str(max(len(records), DEFAULT_MAX_RECORDS)), **store_env)
        for first in range(0, len(records), POST_RECORDS):
            load(server, json.dumps(records[first:first + POST_RECORDS]).encode())
        rows = [("/size alone", wrk(url(server) + SIZE_PATH, SIZE_CONNECTIONS, seconds), [])]
        rows += [(f"beside {name}", *size_beside(server, path, seconds)) for name, path in LOOPED.items()]
    return rows


def line(name, size, latencies):
    looped = (f"; the looping client {len(latencies)} answers, median {statistics.median(latencies) * 1000:.0f} ms"
              if latencies else "")
    return f"  {name:<22} GET /size {size['rps']:8.0f} req/s, p99 {size['p99_us'] / 1000:8.2f} ms{looped}"


def facet_lines(seconds, with_redis=False, shapes=tuple(SHAPES)):
    """The rows of every shape on the in-memory store, then (``with_redis``) on a redis-server of its own."""
    redis = RedisServer().start() if with_redis else None
    try:
        for store in ["memory", "redis"] if redis else ["memory"]:
            for shape in shapes:
                store_env = {}
                if redis is not None and store == "redis":
                    redis.flush()
                    # Queuing a 50,000-record POST takes longer than the default timeout on a loaded machine.
                    store_env = {"GROWTH_STORE": redis.url, "GROWTH_REDIS_TIMEOUT": "10"}
                yield f"{store}, {shape}, GET /size with wrk -c{SIZE_CONNECTIONS} for {seconds} s:"
                for row in measure(shape, seconds, store_env):
                    yield line(*row)
    finally:
        if redis is not None:
            redis.stop()


def main():
    parser = argparse.ArgumentParser(prog="python -m scripts.benchmark.facets", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--redis", action="store_true", help="on a Redis store too")
    parser.add_argument("--shape", action="append", choices=SHAPES, help="default: every shape")
    args = parser.parse_args()
    for text in facet_lines(args.seconds, args.redis, args.shape or tuple(SHAPES)):
        print(text, flush=True)


if __name__ == "__main__":
    main()
