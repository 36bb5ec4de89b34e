"""The Redis facet tallies' self-check and their build (issue 47's follow-up): a Redis of its own filled with
``--records`` records in ``--names`` names (half countries, half indicators; two years a series), written as
a version before the tallies left it; then the build from it (steps, Redis time, wall time), the self-check
as start-up runs it (``build_tallies.lua`` on current tallies) and as a facet read runs it (one ``MGET``),
medians of ``--checks`` runs, and a rebuild once a write of an older version made them wrong:

    .venv/bin/python -m scripts.benchmark.tally_check [--records 1000000] [--names 100000] [--checks 2000]
"""

import argparse
import statistics
import time
from typing import Any

import redis as redis_py

from growth_gevent.stores.redis import scripts
from growth_gevent.stores.redis.keys import DATA_MARKER, GENERATION, PREFIX, SIZE, series_key
from growth_gevent.stores.redis.reads import BUILD_BUDGET, FACET_STATE, SCAN_SERIES_COST
from growth_gevent.testing import RedisServer

YEARS = (2000, 2001)
FILL_BATCH = 5000


def fill(direct: redis_py.Redis, records: int, names: int) -> int:
    """Series of two years, each country's indicators consecutive; returns the series written."""
    countries = indicators = names // 2
    series = records // len(YEARS)
    per_country = -(-series // countries)
    pipeline = direct.pipeline(transaction=False)
    for n in range(series):
        country, indicator = f"C{n // per_country:06}", f"I{(n * 7919) % indicators:06}"
        pipeline.hset(series_key(country, indicator), mapping={year: "1" for year in YEARS})
        pipeline.zadd(f"{PREFIX}i:{country}", {indicator: 0})
        pipeline.zadd(f"{PREFIX}countries", {country: 0})
        if n % FILL_BATCH == FILL_BATCH - 1:
            pipeline.execute()
    pipeline.set(SIZE, series * len(YEARS))
    pipeline.set(GENERATION, series)
    pipeline.set(DATA_MARKER, "benchmark")
    pipeline.execute()
    return series


def evalsha_usec(direct: redis_py.Redis) -> tuple[int, int]:
    stats = direct.info("commandstats").get("cmdstat_evalsha", {"calls": 0, "usec": 0})
    return stats["calls"], stats["usec"]


# The build's arguments (tally_build.py's): a pause of a millisecond after a build, so that the rebuild is not
# held back.
BUILD_ARGUMENTS = [PREFIX, "benchmark", 5000, BUILD_BUDGET, SCAN_SERIES_COST, 1]


def build(direct: redis_py.Redis) -> str:
    """The build's steps until it is done, as one worker runs them (tally_build.py, without its yields): wall
    time, and per kind of step (clearing the old tallies, counting the series) their number and longest."""
    calls, usec = evalsha_usec(direct)
    started = time.perf_counter()
    steps: dict[str, list[float]] = {"clear": [], "count": []}
    while True:
        step = time.perf_counter()
        reply = direct.evalsha(scripts.BUILD_TALLIES.sha, 0, *BUILD_ARGUMENTS)
        spent = (time.perf_counter() - step) * 1000
        if reply[0] == b"done":
            break
        if reply[0] == b"more":
            steps["count" if reply[1] else "clear"].append(spent)
    now_calls, now_usec = evalsha_usec(direct)
    kinds = ", ".join(f"{len(times)} {kind} steps (median {statistics.median(times):.1f} ms, longest "
                      f"{max(times):.1f} ms)" for kind, times in steps.items() if times)
    return (f"{time.perf_counter() - started:.1f} s, {now_calls - calls} steps, Redis {(now_usec - usec) / 1000:,.0f} "
            f"ms: {kinds}")


def median_us(call: Any, times: int) -> float:
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        spent.append(time.perf_counter() - started)
    return statistics.median(spent) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--names", type=int, default=100_000)
    parser.add_argument("--checks", type=int, default=2000)
    options = parser.parse_args()
    server = RedisServer().start()
    try:
        direct = redis_py.Redis.from_url(server.url, socket_timeout=60)
        for script in scripts.EVERY:
            direct.script_load(script.source)
        started = time.perf_counter()
        series = fill(direct, options.records, options.names)
        keys = direct.dbsize()
        print(f"store: {options.records:,} records in {series:,} series, {options.names:,} names, {keys:,} keys "
              f"(written in {time.perf_counter() - started:.1f} s)")
        print("build from a store without tallies:", build(direct))
        direct.config_resetstat()
        start_up = median_us(lambda: direct.evalsha(scripts.BUILD_TALLIES.sha, 0, *BUILD_ARGUMENTS), options.checks)
        calls, usec = evalsha_usec(direct)
        facet_read = median_us(lambda: direct.mget(*FACET_STATE), options.checks)
        print(f"self-check at start-up (build_tallies.lua, tallies current): median {start_up:.1f} us a round trip, "
              f"Redis {usec / calls:.2f} us a script (mean of {calls})")
        print(f"self-check on a facet read (the MGET it sends anyway, 6 keys): median {facet_read:.1f} us a round trip")
        # A worker of an older version creates one record: the check finds it and the tallies are counted again.
        direct.hset(series_key("OLD", "OLD"), 1999, "1")
        direct.incr(SIZE)
        direct.incr(GENERATION)
        direct.zadd(f"{PREFIX}i:OLD", {"OLD": 0})
        direct.zadd(f"{PREFIX}countries", {"OLD": 0})
        print("rebuild after an older worker's write (tallies dropped, cleared, counted):", build(direct))
        memory = direct.info("memory")["used_memory"] / 2 ** 20
        print(f"used_memory {memory:.1f} MiB")
        direct.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
