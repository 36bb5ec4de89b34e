"""Configuration, read once from the environment at start-up.

Each setting is declared once, in ``SETTINGS``: its variable, its field on :class:`Config`, how its text
is parsed, its default and a line of help. ``Config`` is generated from that list, and
``tests/test_docs.py`` checks that the README's configuration table lists exactly these variables.
"""

import dataclasses

_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
_TRUE = ("1", "on", "true", "yes")
_FALSE = ("0", "off", "false", "no")
MiB = 1024 * 1024

DEFAULT_HOST = "0.0.0.0"
DEFAULT_PORT = 8080
DEFAULT_MAX_BODY_BYTES = 8 * MiB
DEFAULT_BODY_BUFFER_BYTES = 64 * MiB
DEFAULT_MAX_HEADER_BYTES = 32 * 1024
DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_BODY_TIMEOUT = 60.0
DEFAULT_KEEPALIVE_TIMEOUT = 5.0
DEFAULT_MAX_CONNECTIONS = 10000
DEFAULT_ACCESS_LOG = False
DEFAULT_SHUTDOWN_TIMEOUT = 8.0
DEFAULT_BULK_CHUNK_RECORDS = 2000
DEFAULT_BULK_MAX_RECORDS = 100_000
DEFAULT_BULK_QUEUE_RECORDS = 500_000
DEFAULT_MAX_RECORDS = 500_000
DEFAULT_SNAPSHOT_INTERVAL = 60.0
# Below this an idle server would spend its time checking whether anything changed.
MIN_SNAPSHOT_INTERVAL = 1.0
DEFAULT_STOP_WRITES_ON_SNAPSHOT_ERROR = True
DEFAULT_METRICS = True
DEFAULT_WORKERS = 1
DEFAULT_REDIS_POOL_SIZE = 8
DEFAULT_REDIS_TIMEOUT = 2.0
DEFAULT_REDIS_TLS_VERIFY = True
DEFAULT_REDIS_CACHE_STALE_SECONDS = 0.1
# A token short enough to guess is no access control: 16 characters, as Redis 6's ACL advice of long
# random passwords; `secrets.token_urlsafe(32)` gives 43.
MIN_API_TOKEN_CHARS = 16


class ConfigError(ValueError):
    """A setting has a value the service cannot run with; the message names the variable."""


def text(raw, environ):
    return raw


def switch(raw, environ):
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise ValueError(f"must be on or off, got {raw!r}")


def integer(lowest, highest=None):
    def parse(raw, environ):
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"must be an integer, got {raw!r}") from None
        if value < lowest or (highest is not None and value > highest):
            bounds = f"between {lowest} and {highest}" if highest is not None else f"at least {lowest}"
            raise ValueError(f"must be {bounds}, got {value}")
        return value
    return parse


def seconds(lowest=0.0, positive=False):
    """A finite number of seconds, at least ``lowest`` (and above 0 when ``positive``)."""
    def parse(raw, environ):
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"must be a number of seconds, got {raw!r}") from None
        if not lowest <= value < float("inf") or (positive and value == 0):
            kind = f"at least {lowest:g}" if lowest else "above 0" if positive else "0 or more"
            raise ValueError(f"must be a number of seconds {kind}, got {raw!r}")
        return value
    return parse


def store_url(raw, environ):
    """``memory`` (None), a Redis URL, or ``redis`` for the URL in REDIS_URL (Heroku's)."""
    if raw.lower() == "memory":
        return None
    if raw.lower() == "redis":
        url = environ.get("REDIS_URL", "").strip()
        if not url:
            raise ValueError("is redis, which reads the Redis URL from REDIS_URL, but REDIS_URL is not set")
        if not url.lower().startswith(_REDIS_SCHEMES):
            raise ValueError(f"is redis, and REDIS_URL must be a URL starting with "
                             f"{', '.join(_REDIS_SCHEMES)}, got {url!r}")
        return url
    if not raw.lower().startswith(_REDIS_SCHEMES):
        raise ValueError(f"must be memory, redis or a URL starting with {', '.join(_REDIS_SCHEMES)}, got {raw!r}")
    return raw


def api_tokens(raw, environ):
    """Bearer tokens, comma-separated."""
    return _tokens(raw.split(","))


def api_tokens_file(raw, environ):
    """Bearer tokens in a file, one a line (a secret mounted as a file); not with GROWTH_API_TOKENS."""
    if environ.get("GROWTH_API_TOKENS", "").strip():
        raise ValueError("and GROWTH_API_TOKENS are both set; set one of them")
    try:
        with open(raw, encoding="utf-8") as tokens:
            lines = tokens.read().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot be read: {error}") from None
    return _tokens(lines)


def _tokens(candidates):
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


@dataclasses.dataclass(frozen=True)
class Setting:
    env: str
    field: str | None  # None: read by another setting's parser (REDIS_URL, by GROWTH_STORE)
    parse: object
    default: object
    help: str


SETTINGS = (
    Setting("HOST", "host", text, DEFAULT_HOST, "address to listen on"),
    Setting("PORT", "port", integer(0, 65535), DEFAULT_PORT,
            "port to listen on (Heroku sets it); `0` picks a free one, printed at start-up"),
    Setting("GROWTH_API_TOKENS", "api_tokens", api_tokens, None,
            "comma-separated bearer tokens: when set, PUT, DELETE and the bulk POST need "
            "`Authorization: Bearer <token>` (`401` without one); reads stay public. Unset: anyone may write"),
    Setting("GROWTH_API_TOKENS_FILE", "api_tokens_file", api_tokens_file, None,
            "a file of bearer tokens, one a line, for secrets mounted as files; instead of `GROWTH_API_TOKENS`"),
    Setting("GROWTH_MAX_BODY_BYTES", "max_body_bytes", integer(1), DEFAULT_MAX_BODY_BYTES,
            "largest request body accepted (`413` past it)"),
    Setting("GROWTH_BODY_BUFFER_BYTES", "body_buffer_bytes", integer(1), DEFAULT_BODY_BUFFER_BYTES,
            "request bodies held in memory at once by a process, all requests together; past it `503` "
            "with `Retry-After`"),
    Setting("GROWTH_MAX_HEADER_BYTES", "max_header_bytes", integer(1024), DEFAULT_MAX_HEADER_BYTES,
            "largest request header block (`431` past it)"),
    Setting("GROWTH_HEADER_TIMEOUT", "header_timeout", seconds(positive=True), DEFAULT_HEADER_TIMEOUT,
            "seconds a client has to send a request's line and headers, from its first byte"),
    Setting("GROWTH_BODY_TIMEOUT", "body_timeout", seconds(positive=True), DEFAULT_BODY_TIMEOUT,
            "seconds a client has to send a whole request body"),
    Setting("GROWTH_KEEPALIVE_TIMEOUT", "keepalive_timeout", seconds(positive=True), DEFAULT_KEEPALIVE_TIMEOUT,
            "seconds an idle keep-alive connection is kept open"),
    Setting("GROWTH_MAX_CONNECTIONS", "max_connections", integer(1), DEFAULT_MAX_CONNECTIONS,
            "client connections a process serves at once, lowered to fit its descriptor limit; past it "
            "`503` and the connection closed"),
    Setting("GROWTH_ACCESS_LOG", "access_log", switch, DEFAULT_ACCESS_LOG,
            "`on`/`off`: one line per request on stderr. Off by default: Heroku's router already logs "
            "every request, and the log costs throughput"),
    Setting("GROWTH_SHUTDOWN_TIMEOUT", "shutdown_timeout", seconds(), DEFAULT_SHUTDOWN_TIMEOUT,
            "seconds that requests in flight get to finish after SIGTERM/SIGINT/SIGHUP"),
    Setting("GROWTH_BULK_CHUNK_RECORDS", "bulk_chunk_records", integer(1), DEFAULT_BULK_CHUNK_RECORDS,
            "records a bulk load applies between yields: smaller means smoother reads during a load, "
            "larger a faster load"),
    Setting("GROWTH_BULK_MAX_RECORDS", "bulk_max_records", integer(1), DEFAULT_BULK_MAX_RECORDS,
            "records one bulk POST may hold (`413` past it, judged before parsing)"),
    Setting("GROWTH_BULK_QUEUE_RECORDS", "bulk_queue_records", integer(1), DEFAULT_BULK_QUEUE_RECORDS,
            "records accepted but not yet applied, all bulk loads together; past it `503` with "
            "`Retry-After` and nothing queued"),
    Setting("GROWTH_MAX_RECORDS", "max_records", integer(1), DEFAULT_MAX_RECORDS,
            "records the store holds at most (as Redis's `maxmemory`, counted in records): a PUT of a new key "
            "or a bulk load that could pass it is `507` with nothing stored or queued; replacing a record "
            "still works"),
    Setting("GROWTH_SNAPSHOT", "snapshot_path", text, None,
            "a file to keep the store in across restarts (see [Durability](#durability)); unset: memory only"),
    Setting("GROWTH_SNAPSHOT_INTERVAL", "snapshot_interval", seconds(MIN_SNAPSHOT_INTERVAL),
            DEFAULT_SNAPSHOT_INTERVAL, "seconds between snapshots, taken only when something changed; at least 1"),
    Setting("GROWTH_STOP_WRITES_ON_SNAPSHOT_ERROR", "stop_writes_on_snapshot_error", switch,
            DEFAULT_STOP_WRITES_ON_SNAPSHOT_ERROR,
            "`on`/`off`: after a failed snapshot, writes answer `503` until a snapshot succeeds (as Redis's "
            "`stop-writes-on-bgsave-error`)"),
    Setting("GROWTH_PRELOAD", "preload_path", text, None,
            "a JSON file in the bulk POST format, loaded at start-up when there is no snapshot (with Redis: "
            "when Redis holds no records)"),
    Setting("GROWTH_METRICS", "metrics", switch, DEFAULT_METRICS,
            "`on`/`off`: the `/metrics` route and the middleware that counts requests"),
    Setting("GROWTH_STORE", "redis_url", store_url, None,
            "`memory`, a Redis URL (`redis://host:port/db`, `rediss://`, `unix://`), or `redis` for the URL "
            "in `REDIS_URL` (see [Scale-out](#scale-out-redis-and-several-workers))"),
    Setting("REDIS_URL", None, text, None, "read when `GROWTH_STORE=redis`; Heroku's Redis add-on sets it"),
    Setting("WEB_CONCURRENCY", "workers", integer(1), DEFAULT_WORKERS,
            "worker processes on the one port; more than 1 needs Redis"),
    Setting("GROWTH_REDIS_POOL_SIZE", "redis_pool_size", integer(1), DEFAULT_REDIS_POOL_SIZE,
            "Redis connections per worker to queue and apply bulk loads (a greenlet waits for a free one); "
            "requests share one pipelined connection"),
    Setting("GROWTH_REDIS_TIMEOUT", "redis_timeout", seconds(positive=True), DEFAULT_REDIS_TIMEOUT,
            "seconds to connect, to wait for a pooled connection and for an answer, before a `503`"),
    Setting("GROWTH_REDIS_TLS_VERIFY", "redis_tls_verify", switch, DEFAULT_REDIS_TLS_VERIFY,
            "`off` accepts a `rediss://` server's certificate without verifying it (Heroku's Redis is "
            "self-signed)"),
    Setting("GROWTH_REDIS_CACHE_STALE_SECONDS", "redis_cache_stale_seconds", seconds(),
            DEFAULT_REDIS_CACHE_STALE_SECONDS,
            "how stale a record read served from a worker's cache may be: it misses no write acknowledged "
            "more than this many seconds before it; `0`: no cache, every read asks Redis"),
)


class _ConfigMethods:
    @classmethod
    def from_env(cls, environ):
        """The config the environment describes; ConfigError naming the variable of a bad value."""
        values = {}
        for setting in SETTINGS:
            raw = environ.get(setting.env, "").strip()
            if setting.field is None or not raw:
                continue
            try:
                values[setting.field] = setting.parse(raw, environ)
            except ValueError as error:
                raise ConfigError(f"{setting.env} {error}") from None
        config = cls(**values)
        config.check()
        return config

    def check(self):
        """Settings that are valid alone but not together."""
        if self.redis_url is None and self.workers > 1:
            raise ConfigError(f"WEB_CONCURRENCY={self.workers} needs a shared store: with the in-memory store "
                              "each worker process would hold its own data; set GROWTH_STORE=redis://... "
                              "or WEB_CONCURRENCY=1")
        if self.redis_url is not None and self.snapshot_path:
            raise ConfigError("GROWTH_SNAPSHOT is for the in-memory store; with GROWTH_STORE=redis, "
                              "persistence is Redis's own (RDB or AOF)")


Config = dataclasses.make_dataclass(
    "Config", [(s.field, object, dataclasses.field(default=s.default)) for s in SETTINGS if s.field],
    bases=(_ConfigMethods,), frozen=True)
Config.__module__ = __name__
Config.__doc__ = "Every setting of the service, by field; see SETTINGS."
