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

    @classmethod
    def from_env(cls, environ):
        return cls(
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
        )


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
