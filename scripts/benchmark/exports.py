"""Ten exports of the 42,450 records at once (issue 26): the resident memory they add to the server, and what
they do to other clients' reads of one record (wrk, its p99 beside the same wrk with no export running, in
interleaved rounds), on one in-memory process and on one worker over Redis. Each exporting client reads
the whole JSON export again and again, as fast as it can. Alone:

    .venv/bin/python -m scripts.benchmark.exports [--rounds 3] [--seconds 5]
"""

import argparse
import contextlib
import http.client
import statistics
import time

from growth_gevent.testing import RedisServer

from .data import DATA_3MB, make_data_files
from .measure import reads_during
from .procfs import memory_bytes
from .runners import wrk
from .scenarios import READ_CONNECTIONS
from .servers import RECORD_PATH, load, put_record, start, url

EXPORTERS = 10
EXPORT_PATH = "/api/v1/growth/export"
RSS_SAMPLE_SECONDS = 0.01


def export_once(port):
    """One whole export, read as it comes; its bytes."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", EXPORT_PATH)
        response = connection.getresponse()
        size = 0
        while chunk := response.read(64 * 1024):
            size += len(chunk)
        if response.status != 200:
            raise SystemExit(f"the export answered {response.status}")
        return size
    finally:
        connection.close()


def with_exports(server, seconds):
    """wrk's figures while EXPORTERS clients export again and again, with the peak resident memory seen and
    the exports finished."""
    def export():
        return "export", export_once(server.port)

    def sample():
        time.sleep(RSS_SAMPLE_SECONDS)
        return "rss", memory_bytes(server.process.pid, "VmRSS")

    result = reads_during(server, [export] * EXPORTERS + [sample], seconds)
    seen = result.pop("writes")
    exports = [size for kind, size in seen if kind == "export"]
    result.update(rss_peak_bytes=max(size for kind, size in seen if kind == "rss"), exports=len(exports),
                  export_bytes=exports[0] if exports else 0)
    return result


def measure_exports(server, rounds, seconds):
    """Interleaved rounds: reads alone, then reads beside the exports; medians."""
    alone, beside, added = [], [], []
    for _ in range(rounds):
        alone.append(wrk(url(server) + RECORD_PATH, READ_CONNECTIONS, seconds))
        before = memory_bytes(server.process.pid, "VmRSS")
        result = with_exports(server, seconds)
        beside.append(result)
        added.append(result["rss_peak_bytes"] - before)
    return {"alone_p99_us": statistics.median(r["p99_us"] for r in alone),
            "alone_rps": statistics.median(r["rps"] for r in alone),
            "beside_p99_us": statistics.median(r["p99_us"] for r in beside),
            "beside_rps": statistics.median(r["rps"] for r in beside),
            "rss_added_mib": statistics.median(added) / 2 ** 20, "rss_added_max_mib": max(added) / 2 ** 20,
            "exports_per_round": statistics.median(r["exports"] for r in beside),
            "export_bytes": beside[-1]["export_bytes"]}


def line(name, figures):
    return (f"{name}: {EXPORTERS} exports at once add {figures['rss_added_mib']:.1f} MiB RSS (median of rounds, "
            f"max {figures['rss_added_max_mib']:.1f}), {figures['exports_per_round']:.0f} exports of "
            f"{figures['export_bytes']:,} B per round; GET of one record, c={READ_CONNECTIONS}: p99 "
            f"{figures['alone_p99_us'] / 1000:.2f} ms alone, {figures['beside_p99_us'] / 1000:.2f} ms beside the "
            f"exports ({figures['alone_rps']:.0f} and {figures['beside_rps']:.0f} req/s)")


def main():
    parser = argparse.ArgumentParser(prog="python -m scripts.benchmark.exports", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    make_data_files()
    payload = DATA_3MB.read_bytes()
    with contextlib.ExitStack() as stack:
        redis_server = RedisServer().start()
        stack.callback(redis_server.stop)
        for name, env in (("memory", {}), ("redis", {"GROWTH_STORE": redis_server.url})):
            server = start(stack, **env)
            put_record(server)
            load(server, payload)
            print(line(name, measure_exports(server, args.rounds, args.seconds)), flush=True)


if __name__ == "__main__":
    main()
