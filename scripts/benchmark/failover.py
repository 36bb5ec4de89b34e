"""Redis behind Sentinel (issue 28): ``./scripts/bench --failover``.

One group of a primary, two replicas and three Sentinels (growth_gevent.testing.sentinel), two servers of
one worker on it, GROWTH_REDIS_MIN_REPLICAS=0 and 1 (a database each), measured interleaved in each run:
PUTs at c=50 with wrk. Then, per run and per setting, a group of its own: 8 writers (the failover test's
Writers), ``kill -9`` of the primary, the seconds to the first write acknowledged after it, and the
acknowledged writes the failover lost.
"""

import contextlib
import json
import statistics
import time

from growth_gevent.testing.polling import wait_for
from growth_gevent.testing.sentinel import SentinelGroup
from growth_gevent.testing.writers import Writers

from .procfs import LOAD_CPU, on_cpu
from .runners import wrk
from .servers import start, url

PUT_SCRIPT = "scripts/wrk/put_records.lua"
CONNECTIONS = 50
SETTINGS = (0, 1)
WRITING_SECONDS = 2
RECOVERY_SECONDS = 30


def measure_failover(runs, seconds):
    results = {replicas: {"put": [], "back_s": [], "lost": [], "acknowledged": []} for replicas in SETTINGS}
    with contextlib.ExitStack() as stack:
        with on_cpu(LOAD_CPU):
            group = SentinelGroup(replicas=2).start()
        stack.callback(group.stop)
        servers = {replicas: start(stack, GROWTH_STORE=group.url.replace("/growth/0", f"/growth/{replicas + 1}"),
                                   GROWTH_REDIS_MIN_REPLICAS=str(replicas)) for replicas in SETTINGS}
        for run in range(runs):
            for replicas in SETTINGS[run % 2:] + SETTINGS[:run % 2]:
                results[replicas]["put"].append(wrk(url(servers[replicas]), CONNECTIONS, seconds, PUT_SCRIPT))
    for _ in range(runs):
        for replicas in SETTINGS:
            back, lost, acknowledged = kill_under_writers(replicas)
            results[replicas]["back_s"].append(back)
            results[replicas]["lost"].append(lost)
            results[replicas]["acknowledged"].append(acknowledged)
    return results


def kill_under_writers(replicas):
    """(seconds from the kill to the next write acknowledged, acknowledged writes lost, writes acknowledged)."""
    with contextlib.ExitStack() as stack:
        with on_cpu(LOAD_CPU):
            group = SentinelGroup(replicas=2).start()
        stack.callback(group.stop)
        server = start(stack, GROWTH_STORE=group.url, workers=2, GROWTH_REDIS_MIN_REPLICAS=str(replicas))
        writers = Writers(server.port).start()
        try:
            wait_for(lambda: len(writers.successes) > 100, 10)
            time.sleep(WRITING_SECONDS)  # writing under load before the kill
            old = group.primary()
            killed = time.monotonic()
            old.stop()
            back = wait_for(lambda: writers.first_success_after(killed + 0.1), RECOVERY_SECONDS)
            time.sleep(WRITING_SECONDS)
        finally:
            writers.stop()
        group.wait_for_failover(old)

        def read(path):
            status, body = server.request("GET", path)
            return json.loads(body)["Value"] if status == 200 else None

        return back - killed, len(writers.lost(read)), len(writers.successes)


def failover_lines(results):
    lines = [f"{'GROWTH_REDIS_MIN_REPLICAS':<27}{'PUT req/s':>10}{'p99 ms':>8}{'errors':>7}"
             f"{'kill -> write s':>16}{'lost / acknowledged, each run':>32}"]
    for replicas, r in results.items():
        puts = r["put"]
        lost = ", ".join(f"{lost}/{acknowledged}" for lost, acknowledged in zip(r["lost"], r["acknowledged"],
                                                                                 strict=True))
        lines.append(f"{replicas:<27}{statistics.median(p['rps'] for p in puts):>10.0f}"
                     f"{statistics.median(p['p99_us'] for p in puts) / 1000:>8.1f}"
                     f"{sum(p['errors'] for p in puts):>7}{statistics.median(r['back_s']):>16.2f}{lost:>32}")
    return lines + [f"(PUTs of 1,000 keys, wrk c={CONNECTIONS}, one worker, medians of the runs, interleaved; kill: "
                    "8 writers on two workers, kill -9 of the primary, a primary and two replicas, Sentinel "
                    "down-after 1 s; lost: acknowledged writes whose value was gone after the failover)"]
