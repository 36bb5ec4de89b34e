"""Facets and year-range lists beside everyone else (issues 34 and 47): a server holding one of SHAPES, one
client looping on a facet or a range list (or creating a record before each facet: the read that follows a
write), and another client's ``GET /size`` req/s and p99 watched meanwhile, against ``/size`` alone in the
same run. Also what the load took, and on Redis its memory and a PUT's time (its script's, from
``INFO commandstats``). On the in-memory store, and on Redis with ``--redis``. Part of ./scripts/bench
(``--facets``: both stores), or alone:

    .venv/bin/python -m scripts.benchmark.facets [--seconds 5] [--redis] [--shape NAME ...] [--records N]
"""

import argparse
import contextlib
import http.client
import json
import statistics
import threading
import time

import redis as redis_py

from growth_gevent.config import DEFAULT_MAX_RECORDS
from growth_gevent.testing import RedisServer

from .procfs import LOAD_CPU, on_cpu
from .runners import wrk
from .servers import load, start, url

SIZE_PATH = "/api/v1/growth/size"
LOOPED = {"/countries": "/api/v1/growth/countries", "/indicators": "/api/v1/growth/indicators",
          "range list": "/api/v1/growth?from=1990&to=2010&limit=1"}
# The looping clients that create a record (a new year of one series each time) before each facet read.
CREATING = {"create, then /countries": "/api/v1/growth/countries"}
CREATED_PATH = "/api/v1/growth/C0000/CREATED/{year}"
SIZE_CONNECTIONS = 10
# PUTs of new records timed one after another, for a PUT's time.
TIMED_PUTS = 2000
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


def ask(connection, method, path, body=None):
    """One request on ``connection``; its seconds. Anything but a 2xx stops the bench."""
    started = time.perf_counter()
    connection.request(method, path, body, {"Content-Type": "application/json"} if body else {})
    response = connection.getresponse()
    response.read()
    if response.status >= 300:
        raise SystemExit(f"{method} {path} answered {response.status}")
    return time.perf_counter() - started


def loop(address, path, stop, latencies, creating=False):
    """GET ``path`` one after another until ``stop`` is set, each after a PUT of a new record when
    ``creating``; each GET's seconds into ``latencies``."""
    host, port = address
    connection = http.client.HTTPConnection(host, port, timeout=60)
    while not stop.is_set():
        if creating:
            ask(connection, "PUT", CREATED_PATH.format(year=3000 + len(latencies)), b'{"value": 1}')
        latencies.append(ask(connection, "GET", path))
    connection.close()


def size_beside(server, path, seconds, creating=False):
    """wrk's GET /size figures while one client loops on ``path``, and that client's own."""
    stop, latencies = threading.Event(), []
    with on_cpu(LOAD_CPU):
        looper = threading.Thread(target=loop, args=(("127.0.0.1", server.port), path, stop, latencies, creating))
    looper.start()
    try:
        size = wrk(url(server) + SIZE_PATH, SIZE_CONNECTIONS, seconds)
    finally:
        stop.set()
        looper.join()
    return size, latencies


def timed_puts(server, redis_url):
    """The median seconds of a PUT creating a record, and (on Redis) the microseconds of Redis time per
    script call meanwhile (``INFO commandstats``, reset first)."""
    client = redis_py.Redis.from_url(redis_url) if redis_url else None
    if client is not None:
        client.config_resetstat()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    # As a load's records come: a new series in each country, then its next year in each (years the
    # countries have already).
    seconds = [ask(connection, "PUT", f"/api/v1/growth/C{n % 100:04}/TIMED/{1980 + n // 100}", b'{"value": 1}')
               for n in range(TIMED_PUTS)]
    connection.close()
    script_us = None
    if client is not None:
        stats = client.info("commandstats")
        script_us = stats.get("cmdstat_evalsha", stats.get("cmdstat_eval", {})).get("usec_per_call")
        client.close()
    return statistics.median(seconds), script_us


def measure(shape, seconds, store_env, records_wanted=None):
    """The lines of one server holding ``shape`` (``records_wanted`` of it, else its default), loaded by bulk
    POSTs of POST_RECORDS each."""
    records = SHAPES[shape](*([records_wanted] if records_wanted else []))
    redis_url = store_env.get("GROWTH_STORE")
    with contextlib.ExitStack() as stack:
        server = start(stack, GROWTH_MAX_RECORDS=str(max(len(records) + 100_000, DEFAULT_MAX_RECORDS)),
                       **store_env)
        client = redis_py.Redis.from_url(redis_url) if redis_url else None
        if client is not None:
            client.config_resetstat()
        loading = sum(load(server, json.dumps(records[first:first + POST_RECORDS]).encode())
                      for first in range(0, len(records), POST_RECORDS))
        in_redis = ""
        if client is not None:
            scripts_us = sum(stats["usec"] for name, stats in client.info("commandstats").items()
                             if name in ("cmdstat_evalsha", "cmdstat_eval"))
            in_redis = (f" (Redis: {scripts_us / 1e6:.1f} s in scripts), used_memory "
                        f"{client.info('memory')['used_memory'] / 2 ** 20:.1f} MiB")
            client.close()
        yield f"  {len(records):,} records loaded in {loading:.1f} s{in_redis}"
        put, script_us = timed_puts(server, redis_url)
        yield f"  PUT creating a record: median {put * 1000:.2f} ms" + (
            f", Redis {script_us:.1f} us per script call" if script_us is not None else "")
        yield line("/size alone", wrk(url(server) + SIZE_PATH, SIZE_CONNECTIONS, seconds), [])
        for name, path in LOOPED.items():
            yield line(f"beside {name}", *size_beside(server, path, seconds))
        for name, path in CREATING.items():
            yield line(f"beside {name}", *size_beside(server, path, seconds, creating=True))


def line(name, size, latencies):
    looped = (f"; the looping client {len(latencies)} answers, median {statistics.median(latencies) * 1000:.1f} ms"
              if latencies else "")
    return f"  {name:<30} GET /size {size['rps']:8.0f} req/s, p99 {size['p99_us'] / 1000:8.2f} ms{looped}"


def facet_lines(seconds, with_redis=False, shapes=tuple(SHAPES), records=None, with_memory=True):
    """The lines of every shape (``records`` of each, else its default) on the in-memory store (unless not
    ``with_memory``), then (``with_redis``) on a redis-server of its own."""
    redis = RedisServer().start() if with_redis else None
    try:
        for store in ["memory"] * with_memory + ["redis"] * (redis is not None):
            for shape in shapes:
                store_env = {}
                if redis is not None and store == "redis":
                    redis.flush()
                    # Queuing a 50,000-record POST takes longer than the default timeout on a loaded machine.
                    store_env = {"GROWTH_STORE": redis.url, "GROWTH_REDIS_TIMEOUT": "10"}
                yield f"{store}, {shape}, GET /size with wrk -c{SIZE_CONNECTIONS} for {seconds} s:"
                yield from measure(shape, seconds, store_env, records)
    finally:
        if redis is not None:
            redis.stop()


def main():
    parser = argparse.ArgumentParser(prog="python -m scripts.benchmark.facets", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--redis", action="store_true", help="on a Redis store too")
    parser.add_argument("--shape", action="append", choices=SHAPES, help="default: every shape")
    parser.add_argument("--records", type=int, help="records of each shape (default: each shape's own)")
    parser.add_argument("--memory-store", action=argparse.BooleanOptionalAction, default=True,
                        help="measure the in-memory store too (default)")
    args = parser.parse_args()
    for text in facet_lines(args.seconds, args.redis, args.shape or tuple(SHAPES), args.records, args.memory_store):
        print(text, flush=True)


if __name__ == "__main__":
    main()
