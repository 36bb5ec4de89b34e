"""Configuration, read once from the environment at start-up.

Each setting is declared once, as a field of :class:`Config`: its type, its variable, how its text is
parsed, its default and a line of help. ``SETTINGS``, which docs/configuration.md (``scripts/settings_doc.py``,
held by ``tests/test_docs.py``) and the command line's flags are made from, is generated from those fields.
"""

import dataclasses
import importlib.util
import re
from collections.abc import Callable, Mapping
from typing import Any

from .durability.journal import FSYNC_POLICIES
from .http.clients import TrustedRouters

# What the Redis store imports; the Docker image's default target leaves them out.
REDIS_CLIENT = ("redis", "hiredis")
_TRUE = ("1", "on", "true", "yes")
_FALSE = ("0", "off", "false", "no")
MiB = 1024 * 1024
# An origin as a browser's Origin header writes it: scheme, host (or [IPv6]) and an optional port, no path.
_ORIGIN = re.compile(r"https?://(?:\[[0-9a-f:.]+\]|[^\s/:@\[\]]+)(?::[0-9]{1,5})?")

DEFAULT_HOST = "0.0.0.0"
DEFAULT_PORT = 8080
DEFAULT_MAX_BODY_BYTES = 8 * MiB
DEFAULT_BODY_BUFFER_BYTES = 64 * MiB
# A quarter: 15 MiB of the bulk bodies' 60 MiB, room for the largest body; of what others leave free, so
# that five clients leave 24 % of each part to the rest.
DEFAULT_BODY_BUFFER_CLIENT_PERCENT = 25
DEFAULT_MAX_HEADER_BYTES = 32 * 1024
DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_BODY_TIMEOUT = 60.0
# Apache's mod_reqtimeout body=10,MinRate=500 (its MinRate default): a grace as long as the header
# timeout, then 500 bytes a second, which the slowest mobile links pass tenfold (GPRS: ~5 kB/s) and
# which makes a connection that holds a body open cost its client 500 bytes a second.
DEFAULT_BODY_GRACE = 10.0
DEFAULT_BODY_MIN_RATE = 500
# Above the idle timeouts of the routers in front (Heroku Router 2.0: 90 s, AWS ALB: 60 s), so that
# the router closes an idle connection first instead of racing the server's close with a request.
DEFAULT_KEEPALIVE_TIMEOUT = 95.0
DEFAULT_MAX_CONNECTIONS = 10000
DEFAULT_ACCESS_LOG = False
DEFAULT_SHUTDOWN_TIMEOUT = 8.0
DEFAULT_BULK_CHUNK_RECORDS = 2000
DEFAULT_BULK_MAX_RECORDS = 100_000
DEFAULT_BULK_QUEUE_RECORDS = 500_000
# From measured bytes per record (docs/api.md, "The store's bound"): room in a 512 MB dyno for the costliest shape.
DEFAULT_MAX_RECORDS = 500_000
DEFAULT_SNAPSHOT_INTERVAL = 60.0
# Below this an idle server would spend its time checking whether anything changed.
MIN_SNAPSHOT_INTERVAL = 1.0
DEFAULT_STOP_WRITES_ON_SNAPSHOT_ERROR = True
DEFAULT_FSYNC = "always"
DEFAULT_METRICS = True
DEFAULT_WORKERS = 1
DEFAULT_REDIS_POOL_SIZE = 8
DEFAULT_REDIS_TIMEOUT = 2.0
DEFAULT_REDIS_TLS_VERIFY = True
DEFAULT_REDIS_CACHE_STALE_SECONDS = 0.1
DEFAULT_REDIS_MIN_REPLICAS = 0
# A replica on the same network confirms within a millisecond or two; well below GROWTH_REDIS_TIMEOUT,
# since the worker's other commands wait behind a WAIT on its connection.
DEFAULT_REDIS_REPLICA_TIMEOUT = 0.5
# A token short enough to guess is no access control; `secrets.token_urlsafe(32)` gives 43 characters.
MIN_API_TOKEN_CHARS = 16


class ConfigError(ValueError):
    """A setting has a value the service cannot run with; the message names the variable:
    ``"<VARIABLE> must ..., got ..."``."""


Environ = Mapping[str, str]
Parser = Callable[[str, Environ], Any]


def text(raw: str, environ: Environ) -> str:
    return raw


def switch(raw: str, environ: Environ) -> bool:
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise ValueError(f"must be on or off, got {raw!r}")


def integer(lowest: int, highest: int | None = None) -> Parser:
    def parse(raw: str, environ: Environ) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"must be an integer, got {raw!r}") from None
        if value < lowest or (highest is not None and value > highest):
            bounds = f"between {lowest} and {highest}" if highest is not None else f"at least {lowest}"
            raise ValueError(f"must be {bounds}, got {raw!r}")
        return value
    return parse


def seconds(lowest: float = 0.0, positive: bool = False) -> Parser:
    """A finite number of seconds, at least ``lowest`` (and above 0 when ``positive``)."""
    def parse(raw: str, environ: Environ) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"must be a number of seconds, got {raw!r}") from None
        if not lowest <= value < float("inf") or (positive and value == 0):
            kind = f"at least {lowest:g}" if lowest else "above 0" if positive else "0 or more"
            raise ValueError(f"must be a number of seconds {kind}, got {raw!r}")
        return value
    return parse


def choice(*choices: str) -> Parser:
    """One of ``choices``, in any case."""
    def parse(raw: str, environ: Environ) -> str:
        if raw.lower() not in choices:
            raise ValueError(f"must be {', '.join(choices[:-1])} or {choices[-1]}, got {raw!r}")
        return raw.lower()
    return parse


def memory_or_store_url(raw: str, environ: Environ) -> str | None:
    """``memory`` (None), a store's URL, or ``redis`` for the URL in REDIS_URL (Heroku's). Which schemes
    name a store is the composition root's to say (``service.STORES``): here, only that it is a URL."""
    if raw.lower() == "memory":
        return None
    if raw.lower() == "redis":
        url = environ.get("REDIS_URL", "").strip()
        if "://" not in url:
            raise ConfigError(f"REDIS_URL must be a URL (redis://host:port/db) when GROWTH_STORE=redis, got {url!r}")
        return url
    if "://" not in raw:
        raise ValueError(f"must be memory, redis or a URL (redis://host:port/db), got {raw!r}")
    return raw


def api_tokens(raw: str, environ: Environ) -> tuple[str, ...]:
    """Bearer tokens, comma-separated."""
    return _tokens(raw.split(","))


def api_tokens_file(raw: str, environ: Environ) -> tuple[str, ...]:
    """Bearer tokens in a file, one a line (a secret mounted as a file); not with GROWTH_API_TOKENS."""
    if environ.get("GROWTH_API_TOKENS", "").strip():
        raise ValueError("and GROWTH_API_TOKENS are both set; set one of them")
    try:
        with open(raw, encoding="utf-8") as tokens:
            lines = tokens.read().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot be read: {error}") from None
    return _tokens(lines)


def _tokens(candidates: list[str]) -> tuple[str, ...]:
    tokens = tuple(token.strip() for token in candidates if token.strip())
    if not tokens:
        raise ValueError("holds no token")
    for token in tokens:
        # What a client can send in `Authorization: Bearer <token>`: printable ASCII without spaces.
        if not (token.isascii() and token.isprintable()) or " " in token:
            raise ValueError("tokens must be printable ASCII without spaces")
        if len(token) < MIN_API_TOKEN_CHARS:
            raise ValueError(f"tokens must be at least {MIN_API_TOKEN_CHARS} characters long, one is {len(token)}")
    return tokens


def trusted_routers(raw: str, environ: Environ) -> TrustedRouters:
    return TrustedRouters.parse(raw)


def origins(raw: str, environ: Environ) -> tuple[str, ...]:
    """``*`` (any origin: ``("*",)``), or origins separated by commas, lower-cased as browsers send them."""
    if raw == "*":
        return ("*",)
    listed = tuple(part.strip().lower() for part in raw.split(",") if part.strip())
    for origin in listed:
        if not _ORIGIN.fullmatch(origin):
            raise ValueError(f"must be * or origins such as https://app.example.com,http://localhost:3000 "
                             f"(scheme, host and port: no path, no trailing slash), got {origin!r}")
    return listed


@dataclasses.dataclass(frozen=True)
class Setting:
    env: str
    field: str | None  # None: read by another setting's parser (REDIS_URL, by GROWTH_STORE)
    type: Any  # what the parser makes of the text: the annotation of the field on Config
    parse: Parser
    default: Any
    help: str


def setting(env: str, parse: Parser, default: Any, help: str, reads: Setting | None = None) -> Any:
    """A field of :class:`Config` read from the variable ``env``; ``reads``: a variable that only its
    parser reads, listed after it."""
    return dataclasses.field(default=default, metadata={"env": env, "parse": parse, "help": help, "reads": reads})


REDIS_URL = Setting("REDIS_URL", None, str, text, None, "read when `GROWTH_STORE=redis`; Heroku's Redis add-on sets it")


@dataclasses.dataclass(frozen=True)
class Config:
    """Every setting of the service, one field each, in the order of docs/configuration.md's table."""

    host: str = setting("HOST", text, DEFAULT_HOST, "address to listen on")
    port: int = setting("PORT", integer(0, 65535), DEFAULT_PORT,
                        "port to listen on (Heroku sets it); `0` picks a free one, printed at start-up")
    api_tokens: tuple[str, ...] | None = setting(
        "GROWTH_API_TOKENS", api_tokens, None,
        "comma-separated bearer tokens: when set, PUT, DELETE and the bulk POST need `Authorization: Bearer "
        "<token>` (`401` without one); reads stay public. Unset: anyone may write")
    api_tokens_file: tuple[str, ...] | None = setting(
        "GROWTH_API_TOKENS_FILE", api_tokens_file, None,
        "a file of bearer tokens, one a line, for secrets mounted as files; instead of `GROWTH_API_TOKENS`")
    max_body_bytes: int = setting("GROWTH_MAX_BODY_BYTES", integer(1), DEFAULT_MAX_BODY_BYTES,
                                  "largest request body accepted (`413` past it)")
    body_buffer_bytes: int = setting(
        "GROWTH_BODY_BUFFER_BYTES", integer(1), DEFAULT_BODY_BUFFER_BYTES,
        "request bodies held in memory at once by a process, all requests together, counted as their bytes "
        "arrive; past it `503` with `Retry-After`. A sixteenth of it is kept for PUT bodies, which bulk bodies "
        "never take")
    body_buffer_client_percent: int = setting(
        "GROWTH_BODY_BUFFER_CLIENT_PERCENT", integer(1, 100), DEFAULT_BODY_BUFFER_CLIENT_PERCENT,
        "percent of what the other clients leave free of `GROWTH_BODY_BUFFER_BYTES` (of the bulk bodies' part "
        "and of the PUT bodies' part alike) that the bodies of one client (an address, an IPv6 /64) may hold at "
        "once, so that n clients leave at least (1 - percent)^n of each part to the others; past it `503` with "
        "`Retry-After`, and a bulk body larger than the percent of the whole part is `413`. Behind a router, "
        "the client is the one `FORWARDED_ALLOW_IPS` names")
    forwarded_allow_ips: TrustedRouters | None = setting(
        "FORWARDED_ALLOW_IPS", trusted_routers, None,
        "the routers whose `X-Forwarded-For` names the client (gunicorn's and uvicorn's variable): addresses and "
        "networks separated by commas, or `*` for whoever connects (where only the router can, as on Heroku). "
        "From them the client is the right-most address in the header that is not theirs, for the body "
        "budgets' shares, the access log and `REMOTE_ADDR`. Unset: the header is ignored, the client is the "
        "socket's address")
    max_header_bytes: int = setting("GROWTH_MAX_HEADER_BYTES", integer(1024), DEFAULT_MAX_HEADER_BYTES,
                                    "largest request header block (`431` past it)")
    header_timeout: float = setting("GROWTH_HEADER_TIMEOUT", seconds(positive=True), DEFAULT_HEADER_TIMEOUT,
                                    "seconds a client has to send a request's line and headers, from its first byte")
    body_timeout: float = setting("GROWTH_BODY_TIMEOUT", seconds(positive=True), DEFAULT_BODY_TIMEOUT,
                                  "seconds a client has to send a whole request body")
    body_grace: float = setting("GROWTH_BODY_GRACE", seconds(positive=True), DEFAULT_BODY_GRACE,
                                "seconds a request body has, from the end of its headers, before "
                                "`GROWTH_BODY_MIN_RATE` applies")
    body_min_rate: int = setting(
        "GROWTH_BODY_MIN_RATE", integer(0), DEFAULT_BODY_MIN_RATE,
        "bytes a second a request body must average after its grace (Apache's `mod_reqtimeout` `MinRate`): "
        "each byte received earns 1/rate s more, up to `GROWTH_BODY_TIMEOUT`; slower is `408` and the "
        "connection closed. `0`: no minimum")
    keepalive_timeout: float = setting("GROWTH_KEEPALIVE_TIMEOUT", seconds(positive=True), DEFAULT_KEEPALIVE_TIMEOUT,
                                       "seconds an idle keep-alive connection is kept open (told to clients in "
                                       "`Keep-Alive: timeout=N`); above the idle timeouts of the routers in front "
                                       "(Heroku Router 2.0: 90 s, AWS ALB: 60 s), so that the router closes an idle "
                                       "connection first instead of sending a request as the server closes it")
    max_connections: int = setting(
        "GROWTH_MAX_CONNECTIONS", integer(1), DEFAULT_MAX_CONNECTIONS,
        "client connections a process serves at once, lowered to fit its descriptor limit; past it `503` and "
        "the connection closed")
    access_log: bool = setting(
        "GROWTH_ACCESS_LOG", switch, DEFAULT_ACCESS_LOG,
        "`on`/`off`: one line per request on stderr. Off by default: Heroku's router already logs every "
        "request, and the log costs throughput")
    shutdown_timeout: float = setting("GROWTH_SHUTDOWN_TIMEOUT", seconds(), DEFAULT_SHUTDOWN_TIMEOUT,
                                      "seconds that requests in flight get to finish after SIGTERM/SIGINT/SIGHUP")
    bulk_chunk_records: int = setting(
        "GROWTH_BULK_CHUNK_RECORDS", integer(1), DEFAULT_BULK_CHUNK_RECORDS,
        "records a bulk load applies between yields: smaller means smoother reads during a load, larger a "
        "faster load")
    bulk_max_records: int = setting("GROWTH_BULK_MAX_RECORDS", integer(1), DEFAULT_BULK_MAX_RECORDS,
                                    "records one bulk POST may hold (`413` past it, judged before parsing)")
    bulk_queue_records: int = setting(
        "GROWTH_BULK_QUEUE_RECORDS", integer(1), DEFAULT_BULK_QUEUE_RECORDS,
        "records accepted but not yet applied, all bulk loads together; past it `503` with `Retry-After` and "
        "nothing queued")
    max_records: int = setting(
        "GROWTH_MAX_RECORDS", integer(1), DEFAULT_MAX_RECORDS,
        "records the store holds at most (as Redis's `maxmemory`, counted in records): a PUT of a new key or a "
        "bulk load that could pass it is `507` with nothing stored or queued; replacing a record still works")
    snapshot_path: str | None = setting(
        "GROWTH_SNAPSHOT", text, None,
        "a file to keep the store in across restarts (see [Durability](durability.md)); unset: memory only")
    snapshot_interval: float = setting(
        "GROWTH_SNAPSHOT_INTERVAL", seconds(MIN_SNAPSHOT_INTERVAL), DEFAULT_SNAPSHOT_INTERVAL,
        "seconds between snapshots, taken only when something changed; at least 1")
    stop_writes_on_snapshot_error: bool = setting(
        "GROWTH_STOP_WRITES_ON_SNAPSHOT_ERROR", switch, DEFAULT_STOP_WRITES_ON_SNAPSHOT_ERROR,
        "`on`/`off`: after a failed snapshot, writes answer `503` until a snapshot succeeds (as Redis's "
        "`stop-writes-on-bgsave-error`)")
    fsync: str = setting(
        "GROWTH_FSYNC", choice(*FSYNC_POLICIES), DEFAULT_FSYNC,
        "with `GROWTH_SNAPSHOT`, when a write's journal record is fsynced: `always` (before the write is "
        "answered), `everysec` (once a second: a crash of the machine loses at most ~1 s), `no` (when the OS "
        "decides); see [Durability](durability.md#what-an-answer-means)")
    preload_path: str | None = setting(
        "GROWTH_PRELOAD", text, None,
        "a JSON file in the bulk POST format, loaded at start-up when there is no snapshot (with Redis: when "
        "Redis holds no records)")
    metrics: bool = setting("GROWTH_METRICS", switch, DEFAULT_METRICS,
                            "`on`/`off`: the `/metrics` route and the middleware that counts requests")
    cors_origins: tuple[str, ...] | None = setting(
        "GROWTH_CORS_ORIGINS", origins, None,
        "origins whose browser scripts may call the API (CORS, preflights included), comma-separated "
        "(`https://app.example.com,http://localhost:3000`), or `*` for any; unset: no CORS headers, so "
        "browsers keep to same-origin calls")
    store_url: str | None = setting(  # which store: None for the in-memory one, else Redis's URL
        "GROWTH_STORE", memory_or_store_url, None,
        "`memory`, a Redis URL (`redis://host:port/db`, `rediss://`, `unix://`; behind Sentinel "
        "`redis+sentinel://host:port,host:port/SERVICE/db`, `rediss+sentinel://`), or `redis` for the URL in "
        "`REDIS_URL` (see [Scale-out](deploy.md#scale-out-redis-and-several-workers))", reads=REDIS_URL)
    workers: int = setting("WEB_CONCURRENCY", integer(1), DEFAULT_WORKERS,
                           "worker processes on the one port; more than 1 needs Redis")
    redis_pool_size: int = setting(
        "GROWTH_REDIS_POOL_SIZE", integer(1), DEFAULT_REDIS_POOL_SIZE,
        "Redis connections per worker to queue and apply bulk loads (a greenlet waits for a free one); "
        "requests share one pipelined connection")
    redis_timeout: float = setting(
        "GROWTH_REDIS_TIMEOUT", seconds(positive=True), DEFAULT_REDIS_TIMEOUT,
        "seconds to connect, to wait for a pooled connection and for an answer, before a `503`")
    redis_tls_verify: bool = setting(
        "GROWTH_REDIS_TLS_VERIFY", switch, DEFAULT_REDIS_TLS_VERIFY,
        "`off` accepts a `rediss://` server's certificate without verifying it (Heroku's Redis is self-signed)")
    redis_cache_stale_seconds: float = setting(
        "GROWTH_REDIS_CACHE_STALE_SECONDS", seconds(), DEFAULT_REDIS_CACHE_STALE_SECONDS,
        "how stale a record read served from a worker's cache may be: it misses no write acknowledged more "
        "than this many seconds before it; `0`: no cache, every read asks Redis")
    redis_min_replicas: int = setting(
        "GROWTH_REDIS_MIN_REPLICAS", integer(0), DEFAULT_REDIS_MIN_REPLICAS,
        "replicas that must confirm a write (Redis's `WAIT`) before it is acknowledged, so that a failover "
        "loses none; unconfirmed in time: `503` (the write may still be applied)")
    redis_replica_timeout: float = setting(
        "GROWTH_REDIS_REPLICA_TIMEOUT", seconds(positive=True), DEFAULT_REDIS_REPLICA_TIMEOUT,
        "with `GROWTH_REDIS_MIN_REPLICAS`, seconds a write waits for the replicas to confirm it; below "
        "`GROWTH_REDIS_TIMEOUT`")

    @classmethod
    def from_env(cls, environ: Environ) -> "Config":
        """The config the environment describes; ConfigError naming the variable of a bad value."""
        values = {}
        for each in SETTINGS:
            raw = environ.get(each.env, "").strip()
            if each.field is None or not raw:
                continue
            try:
                values[each.field] = each.parse(raw, environ)
            except ConfigError:
                raise
            except ValueError as error:
                raise ConfigError(f"{each.env} {error}") from None
        config = cls(**values)
        config.check()
        return config

    def check(self) -> None:
        """Settings that are valid alone but not together."""
        if self.store_url is None and self.workers > 1:
            raise ConfigError(f"WEB_CONCURRENCY={self.workers} needs a shared store: with the in-memory store "
                              "each worker process would hold its own data; set GROWTH_STORE=redis://... "
                              "or WEB_CONCURRENCY=1")
        if self.store_url is not None and self.snapshot_path:
            raise ConfigError("GROWTH_SNAPSHOT is for the in-memory store; with GROWTH_STORE=redis, "
                              "persistence is Redis's own (RDB or AOF)")
        if self.redis_min_replicas and self.redis_replica_timeout >= self.redis_timeout:
            raise ConfigError(f"GROWTH_REDIS_REPLICA_TIMEOUT={self.redis_replica_timeout:g} must be below "
                              f"GROWTH_REDIS_TIMEOUT={self.redis_timeout:g}: a worker's other commands wait behind "
                              "the replicas' confirmation")
        missing = [name for name in REDIS_CLIENT if importlib.util.find_spec(name) is None]
        if self.store_url is not None and missing:
            raise ConfigError(f"GROWTH_STORE names a Redis server, but the Redis client ({', '.join(missing)}) "
                              "is not installed here: the Docker image's default target is the in-memory "
                              "store only, build it with --target redis; else pip install 'growth-gevent[redis]'")


def _settings() -> tuple[Setting, ...]:
    table = []
    for field in dataclasses.fields(Config):
        meta = field.metadata
        table.append(Setting(meta["env"], field.name, field.type, meta["parse"], field.default, meta["help"]))
        if meta["reads"] is not None:
            table.append(meta["reads"])
    return tuple(table)


SETTINGS = _settings()
