"""Configuration, read once from the environment at start-up."""

from dataclasses import dataclass

from .bulk import DEFAULT_CHUNK_SIZE

DEFAULT_HOST = "0.0.0.0"
DEFAULT_PORT = 8080
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_ACCESS_LOG = False
DEFAULT_SHUTDOWN_TIMEOUT = 20.0
DEFAULT_BULK_CHUNK_RECORDS = DEFAULT_CHUNK_SIZE
DEFAULT_SNAPSHOT_INTERVAL = 60.0
DEFAULT_METRICS = True
DEFAULT_WORKERS = 1
DEFAULT_REDIS_POOL_SIZE = 64
DEFAULT_REDIS_TIMEOUT = 2.0
DEFAULT_REDIS_TLS_VERIFY = True

_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")

_TRUE = ("1", "on", "true", "yes")
_FALSE = ("0", "off", "false", "no")


class ConfigError(ValueError):
    """A setting has a value the service cannot run with; the message names the variable."""


@dataclass(frozen=True)
class Config:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    access_log: bool = DEFAULT_ACCESS_LOG
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT
    bulk_chunk_records: int = DEFAULT_BULK_CHUNK_RECORDS
    snapshot_path: str | None = None
    snapshot_interval: float = DEFAULT_SNAPSHOT_INTERVAL
    preload_path: str | None = None
    metrics: bool = DEFAULT_METRICS
    redis_url: str | None = None  # None: the in-memory store
    workers: int = DEFAULT_WORKERS
    redis_pool_size: int = DEFAULT_REDIS_POOL_SIZE
    redis_timeout: float = DEFAULT_REDIS_TIMEOUT
    redis_tls_verify: bool = DEFAULT_REDIS_TLS_VERIFY

    @classmethod
    def from_env(cls, environ):
        config = cls(
            host=environ.get("HOST", DEFAULT_HOST) or DEFAULT_HOST,
            port=_integer(environ, "PORT", DEFAULT_PORT, 0, 65535),
            max_body_bytes=_integer(environ, "GROWTH_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES, 1, None),
            access_log=_switch(environ, "GROWTH_ACCESS_LOG", DEFAULT_ACCESS_LOG),
            shutdown_timeout=_seconds(environ, "GROWTH_SHUTDOWN_TIMEOUT", DEFAULT_SHUTDOWN_TIMEOUT),
            bulk_chunk_records=_integer(environ, "GROWTH_BULK_CHUNK_RECORDS", DEFAULT_BULK_CHUNK_RECORDS, 1, None),
            snapshot_path=environ.get("GROWTH_SNAPSHOT", "").strip() or None,
            snapshot_interval=_seconds(environ, "GROWTH_SNAPSHOT_INTERVAL", DEFAULT_SNAPSHOT_INTERVAL,
                                       positive=True),
            preload_path=environ.get("GROWTH_PRELOAD", "").strip() or None,
            metrics=_switch(environ, "GROWTH_METRICS", DEFAULT_METRICS),
            redis_url=_store_url(environ),
            workers=_integer(environ, "WEB_CONCURRENCY", DEFAULT_WORKERS, 1, None),
            redis_pool_size=_integer(environ, "GROWTH_REDIS_POOL_SIZE", DEFAULT_REDIS_POOL_SIZE, 1, None),
            redis_timeout=_seconds(environ, "GROWTH_REDIS_TIMEOUT", DEFAULT_REDIS_TIMEOUT, positive=True),
            redis_tls_verify=_switch(environ, "GROWTH_REDIS_TLS_VERIFY", DEFAULT_REDIS_TLS_VERIFY),
        )
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


def _store_url(environ):
    """GROWTH_STORE: empty or ``memory``, a Redis URL, or ``redis`` for the URL in REDIS_URL (Heroku's)."""
    raw = environ.get("GROWTH_STORE", "").strip()
    if raw.lower() in ("", "memory"):
        return None
    name = "GROWTH_STORE"
    if raw.lower() == "redis":
        name, raw = "REDIS_URL", environ.get("REDIS_URL", "").strip()
        if not raw:
            raise ConfigError("GROWTH_STORE=redis reads the Redis URL from REDIS_URL, which is not set")
    if not raw.lower().startswith(_REDIS_SCHEMES):
        raise ConfigError(f"{name} must be memory, redis or a URL starting with "
                          f"{', '.join(_REDIS_SCHEMES)}, got {raw!r}")
    return raw


def _integer(environ, name, default, lowest, highest):
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value < lowest or (highest is not None and value > highest):
        bounds = f"between {lowest} and {highest}" if highest is not None else f"at least {lowest}"
        raise ConfigError(f"{name} must be {bounds}, got {value}")
    return value


def _seconds(environ, name, default, positive=False):
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not 0 <= value < float("inf") or (positive and value == 0):
        kind = "positive" if positive else "non-negative"
        raise ConfigError(f"{name} must be a {kind} number of seconds, got {raw!r}")
    return value


def _switch(environ, name, default):
    raw = environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ConfigError(f"{name} must be on or off, got {raw!r}")
