"""What the bench measures: the servers it starts (by label), and the rows it drives them with, in the
order they are interleaved in every run."""

import dataclasses

from .runners import AB_CONCURRENCY, AB_REQUESTS, GET_RECORD_SCRIPT, ab, k6, wrk
from .servers import RECORD_PATH, url

SERIES_PATH = "/api/v1/growth/BRZ/NGDP_R"
SLICE_PATH = "/api/v1/growth?country=BRZ&limit=100"
MIX_SCRIPT = "scripts/wrk/read_update.lua"
REDIS_WORKERS = (1, 2)
READ_CONNECTIONS = 10  # wrk's connections in the rows that read while something else writes
FLOOD_CLIENTS = 10  # the challenge's script-post.js: 10 VUs posting the 500 kB file back to back

CEILING_ROW = "ceiling: bare WSGI, c=50"
GET_BASELINE = "GET one record, c=50"
KEEPALIVE_ROW = "GET one record, c=1 (keep-alive latency)"
MIX_ROW = "read/update mix, c=50"
AB_ROW = f"ab -n{AB_REQUESTS} -c{AB_CONCURRENCY}, a connection per GET"
MEMORY, NO_METRICS, BARE = "in-memory", "in-memory, GROWTH_METRICS=off", "ceiling"


def redis_label(workers):
    return f"Redis, {workers} worker{'s' if workers > 1 else ''}"


def mix_row(server):
    return f"{server}: challenge mix, 100 VUs, no sleep"


MEMORY_MIX = mix_row(MEMORY)


REDIS = [redis_label(workers) for workers in REDIS_WORKERS]
# Every read asks Redis (GROWTH_REDIS_CACHE_STALE_SECONDS=0): what a read costs when the cache misses.
REDIS_UNCACHED = f"{REDIS[0]}, no cache"


@dataclasses.dataclass(frozen=True)
class Wrk:
    """wrk with ``connections`` on ``path`` of the server named ``server``, for the given seconds."""
    name: str
    server: str
    connections: int
    path: str = RECORD_PATH
    script: str = GET_RECORD_SCRIPT
    ratios: tuple = (("ratio_to_ceiling", CEILING_ROW), ("ratio_to_memory", GET_BASELINE))
    totals: tuple = ("errors",)

    def run(self, servers, seconds):
        return wrk(url(servers[self.server]) + self.path, self.connections, seconds, self.script)


@dataclasses.dataclass(frozen=True)
class Ab:
    """ab's AB_REQUESTS one-record GETs, AB_CONCURRENCY at a time, on the server named ``server``."""
    name: str
    server: str
    ratios: tuple = ()
    totals: tuple = ("errors", "non_2xx")

    def run(self, servers, seconds):
        return ab(url(servers[self.server]) + RECORD_PATH)


@dataclasses.dataclass(frozen=True)
class K6:
    """k6 running scripts/k6/``script`` against the server named ``server``; ``{seconds}`` in an argument
    is the bench's --seconds. ``gated``: its thresholds are a target of ours (not for a load past the one
    the script's thresholds are set for, nor for the challenge's own thresholds)."""
    name: str
    server: str
    script: str
    arguments: tuple
    ratios: tuple = ()
    gated: bool = True
    totals: tuple = ("runs_crossed",)

    def run(self, servers, seconds):
        return k6(self.script, url(servers[self.server]), [a.format(seconds=seconds) for a in self.arguments])


def k6_mix(server):
    return K6(mix_row(server), server, "challenge_mix.js",
              ("--vus", "100", "--duration", "{seconds}s", "-e", "SLEEP=0"), ratios=(("ratio_to_memory", MEMORY_MIX),))


# Interleaved in this order in every run, so that noise hits every row alike.
HTTP_SCENARIOS = [
    Wrk(CEILING_ROW, BARE, 50, path="/"),
    Wrk(KEEPALIVE_ROW, MEMORY, 1),
    Wrk(GET_BASELINE, MEMORY, 50),
    Wrk("GET one record, c=50, GROWTH_METRICS=off", NO_METRICS, 50),
    Wrk(MIX_ROW, MEMORY, 50, path="", script=MIX_SCRIPT),
    Wrk("GET a series, c=50", MEMORY, 50, path=SERIES_PATH),
    Wrk("GET a country slice (100 records), c=50", MEMORY, 50, path=SLICE_PATH),
    *[scenario for label in REDIS for scenario in (
        Wrk(f"{label}: {GET_BASELINE}", label, 50),
        Wrk(f"{label}: {MIX_ROW}", label, 50, path="", script=MIX_SCRIPT,
            ratios=(("ratio_to_ceiling", CEILING_ROW), ("ratio_to_memory", MIX_ROW))))],
    Wrk(f"{REDIS_UNCACHED}: {GET_BASELINE}", REDIS_UNCACHED, 50),
    K6("read_update.js: 50 VUs, no think time", MEMORY, "read_update.js",
       ("--vus", "50", "--duration", "{seconds}s", "-e", "SLEEP=0")),
    *[k6_mix(server) for server in (MEMORY, *REDIS)],
    K6("soak_1000.js: 1000 VUs, 1 s think time", MEMORY, "soak_1000.js",
       ("--stage", "5s:1000", "--stage", "{seconds}s:1000", "--stage", "2s:0")),
    *[Ab(f"{server}: {AB_ROW}", server, ratios=(("ratio_to_memory", f"{MEMORY}: {AB_ROW}"),))
      for server in (MEMORY, REDIS[-1])],
    # c=1000 last: closing a thousand connections keeps the server busy for a moment afterwards.
    Wrk("GET one record, c=1000", MEMORY, 1000),
]
# They queue bulk loads: each is followed by a wait until the server has applied them all.
BULK_SCENARIOS = [
    K6("bulk_post.js: its 5 VUs, 500 kB posts, status polled", MEMORY, "bulk_post.js",
       ("--vus", "5", "--duration", "{seconds}s")),
    K6("bulk_post.js: 20 VUs (past its thresholds' load)", MEMORY, "bulk_post.js",
       ("--vus", "20", "--duration", "{seconds}s"), gated=False),
    K6("challenge POST: 10 VUs, 500 kB back to back", MEMORY, "challenge_post.js", ("--duration", "{seconds}s"),
       gated=False),
]
GATED_K6_ROWS = {scenario.name for scenario in [*HTTP_SCENARIOS, *BULK_SCENARIOS]
                 if isinstance(scenario, K6) and scenario.gated}
