import importlib.util
import re

import pytest

from growth_gevent.config import DEFAULT_BULK_CHUNK_RECORDS, DEFAULT_MAX_BODY_BYTES, Config, ConfigError


def test_defaults_when_the_environment_is_empty():
    config = Config.from_env({})
    assert config == Config()
    assert (config.host, config.port, config.max_body_bytes, config.access_log, config.shutdown_timeout,
            config.bulk_chunk_records, config.snapshot_path, config.snapshot_interval, config.preload_path,
            config.max_records) == (
        "0.0.0.0", 8080, 8 * 1024 * 1024, False, 8.0, DEFAULT_BULK_CHUNK_RECORDS, None, 60.0, None, 500_000)
    assert DEFAULT_MAX_BODY_BYTES == 8 * 1024 * 1024


def test_one_client_address_holds_a_quarter_of_the_body_budget_unless_set():
    assert Config.from_env({}).body_buffer_client_percent == 25
    assert Config.from_env({"GROWTH_BODY_BUFFER_CLIENT_PERCENT": "100"}).body_buffer_client_percent == 100


def test_a_body_has_a_grace_of_10_s_then_500_bytes_a_second_as_mod_reqtimeout_and_0_turns_the_rate_off():
    config = Config.from_env({})
    assert (config.body_grace, config.body_min_rate, config.body_timeout) == (10.0, 500, 60.0)
    assert Config.from_env({"GROWTH_BODY_MIN_RATE": "0"}).body_min_rate == 0


def test_every_variable_is_read():
    config = Config.from_env({"HOST": "127.0.0.1", "PORT": "5000", "GROWTH_MAX_BODY_BYTES": "100",
                              "GROWTH_ACCESS_LOG": "on", "GROWTH_SHUTDOWN_TIMEOUT": "2.5",
                              "GROWTH_BULK_CHUNK_RECORDS": "10", "GROWTH_SNAPSHOT": "/d/s",
                              "GROWTH_SNAPSHOT_INTERVAL": "1.5", "GROWTH_PRELOAD": "/d/p.json",
                              "GROWTH_HEADER_TIMEOUT": "3", "GROWTH_BODY_TIMEOUT": "4",
                              "GROWTH_KEEPALIVE_TIMEOUT": "0.5", "GROWTH_MAX_CONNECTIONS": "50",
                              "GROWTH_MAX_HEADER_BYTES": "2048", "GROWTH_BODY_BUFFER_BYTES": "1000",
                              "GROWTH_BULK_MAX_RECORDS": "7", "GROWTH_BULK_QUEUE_RECORDS": "8",
                              "GROWTH_STOP_WRITES_ON_SNAPSHOT_ERROR": "off", "GROWTH_METRICS": "off",
                              "GROWTH_BODY_GRACE": "2", "GROWTH_BODY_MIN_RATE": "100",
                              "GROWTH_BODY_BUFFER_CLIENT_PERCENT": "50"})
    assert config == Config(host="127.0.0.1", port=5000, max_body_bytes=100, access_log=True,
                            shutdown_timeout=2.5, bulk_chunk_records=10, snapshot_path="/d/s",
                            snapshot_interval=1.5, preload_path="/d/p.json", header_timeout=3.0,
                            body_timeout=4.0, keepalive_timeout=0.5, max_connections=50, max_header_bytes=2048,
                            body_buffer_bytes=1000, bulk_max_records=7, bulk_queue_records=8,
                            stop_writes_on_snapshot_error=False, metrics=False, body_grace=2.0,
                            body_min_rate=100, body_buffer_client_percent=50)


@pytest.mark.parametrize("raw, expected", [("off", False), ("0", False), ("No", False),
                                           ("true", True), ("YES", True), ("1", True)])
def test_access_log_switch_words(raw, expected):
    assert Config.from_env({"GROWTH_ACCESS_LOG": raw}).access_log is expected


@pytest.mark.parametrize("name, raw", [
    ("PORT", "abc"), ("PORT", "-1"), ("PORT", "65536"), ("PORT", "80.5"),
    ("GROWTH_MAX_BODY_BYTES", "-1"), ("GROWTH_MAX_BODY_BYTES", "0"), ("GROWTH_MAX_BODY_BYTES", "1MB"),
    ("GROWTH_ACCESS_LOG", "maybe"),
    ("GROWTH_SHUTDOWN_TIMEOUT", "-1"), ("GROWTH_SHUTDOWN_TIMEOUT", "soon"),
    ("GROWTH_SHUTDOWN_TIMEOUT", "inf"), ("GROWTH_SHUTDOWN_TIMEOUT", "nan"),
    ("GROWTH_BULK_CHUNK_RECORDS", "0"),
    ("GROWTH_SNAPSHOT_INTERVAL", "0"), ("GROWTH_SNAPSHOT_INTERVAL", "-1"), ("GROWTH_SNAPSHOT_INTERVAL", "often"),
    ("GROWTH_SNAPSHOT_INTERVAL", "0.000001"), ("GROWTH_HEADER_TIMEOUT", "0"), ("GROWTH_BODY_TIMEOUT", "-1"),
    ("GROWTH_KEEPALIVE_TIMEOUT", "never"), ("GROWTH_MAX_CONNECTIONS", "0"), ("GROWTH_MAX_HEADER_BYTES", "100"),
    ("GROWTH_BODY_BUFFER_BYTES", "0"), ("GROWTH_BODY_BUFFER_CLIENT_PERCENT", "0"),
    ("GROWTH_BODY_BUFFER_CLIENT_PERCENT", "101"), ("GROWTH_BODY_BUFFER_CLIENT_PERCENT", "12.5"),
    ("GROWTH_BULK_MAX_RECORDS", "0"), ("GROWTH_BULK_QUEUE_RECORDS", "-5"),
    ("GROWTH_STOP_WRITES_ON_SNAPSHOT_ERROR", "perhaps"), ("GROWTH_FSYNC", "sometimes"), ("GROWTH_FSYNC", "1"),
    ("GROWTH_REDIS_CACHE_STALE_SECONDS", "-0.1"), ("GROWTH_BODY_GRACE", "0"), ("GROWTH_BODY_GRACE", "inf"),
    ("GROWTH_BODY_MIN_RATE", "-1"), ("GROWTH_BODY_MIN_RATE", "0.5"), ("GROWTH_BODY_MIN_RATE", "fast"),
    ("GROWTH_REDIS_CACHE_STALE_SECONDS", "100ms"), ("GROWTH_REDIS_CACHE_STALE_SECONDS", "inf"),
])
def test_a_bad_value_names_the_variable_what_it_must_be_and_what_it_got(name, raw):
    with pytest.raises(ConfigError, match=rf"^{name} must .+, got .*{re.escape(raw)}"):
        Config.from_env({name: raw})


def test_the_memory_store_is_the_default_with_one_worker():
    config = Config.from_env({})
    assert (config.store_url, config.workers) == (None, 1)
    assert Config.from_env({"GROWTH_STORE": "memory"}).store_url is None


def test_a_redis_url_selects_the_redis_store_with_its_settings():
    config = Config.from_env({"GROWTH_STORE": "redis://h:6380/2", "WEB_CONCURRENCY": "4",
                              "GROWTH_REDIS_POOL_SIZE": "9", "GROWTH_REDIS_TIMEOUT": "0.5",
                              "GROWTH_REDIS_TLS_VERIFY": "off", "GROWTH_REDIS_CACHE_STALE_SECONDS": "0.25"})
    assert (config.store_url, config.workers, config.redis_pool_size, config.redis_timeout,
            config.redis_tls_verify, config.redis_cache_stale_seconds) == ("redis://h:6380/2", 4, 9, 0.5, False, 0.25)


@pytest.mark.parametrize("environ, bound", [({}, 0.1), ({"GROWTH_REDIS_CACHE_STALE_SECONDS": "0"}, 0.0)])
def test_the_redis_read_cache_is_bounded_to_0_1_s_by_default_and_0_turns_it_off(environ, bound):
    assert Config.from_env({"GROWTH_STORE": "redis://h", **environ}).redis_cache_stale_seconds == bound


def test_growth_store_redis_reads_herokus_redis_url():
    config = Config.from_env({"GROWTH_STORE": "redis", "REDIS_URL": "rediss://u:p@h:1/0"})
    assert config.store_url == "rediss://u:p@h:1/0"


@pytest.mark.parametrize("environ, name", [
    ({"GROWTH_STORE": "redis"}, "REDIS_URL"),
    ({"GROWTH_STORE": "redis", "REDIS_URL": "h:6379"}, "REDIS_URL"),
    ({"GROWTH_STORE": "h:6379"}, "GROWTH_STORE"),
    ({"WEB_CONCURRENCY": "0"}, "WEB_CONCURRENCY"),
    ({"WEB_CONCURRENCY": "two"}, "WEB_CONCURRENCY"),
    ({"GROWTH_STORE": "redis://h", "GROWTH_REDIS_POOL_SIZE": "0"}, "GROWTH_REDIS_POOL_SIZE"),
    ({"GROWTH_STORE": "redis://h", "GROWTH_REDIS_TIMEOUT": "0"}, "GROWTH_REDIS_TIMEOUT"),
    ({"GROWTH_STORE": "redis://h", "GROWTH_REDIS_TLS_VERIFY": "maybe"}, "GROWTH_REDIS_TLS_VERIFY"),
])
def test_a_bad_store_setting_names_the_variable_what_it_must_be_and_what_it_got(environ, name):
    with pytest.raises(ConfigError, match=rf"^{name} must .+, got {re.escape(repr(environ.get(name, '')))}$"):
        Config.from_env(environ)


def test_several_workers_on_the_memory_store_are_refused_with_the_reason():
    with pytest.raises(ConfigError, match="WEB_CONCURRENCY=2 needs a shared store: with the in-memory store "
                                          "each worker process would hold its own data"):
        Config.from_env({"WEB_CONCURRENCY": "2"})


def test_snapshots_are_refused_with_redis_whose_persistence_is_its_own():
    with pytest.raises(ConfigError, match="GROWTH_SNAPSHOT is for the in-memory store"):
        Config.from_env({"GROWTH_STORE": "redis://h", "GROWTH_SNAPSHOT": "/d/s"})


def test_redis_without_its_client_installed_is_refused_naming_what_is_missing(monkeypatch):
    """The Docker image's default target has no Redis client: a clear exit 2, not a traceback at start."""
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "hiredis" else find_spec(name))
    with pytest.raises(ConfigError, match=r"the Redis client \(hiredis\) is not installed here: the Docker "
                                          "image's default target is the in-memory store only, build it with "
                                          "--target redis"):
        Config.from_env({"GROWTH_STORE": "redis://h"})
    assert Config.from_env({}).store_url is None


@pytest.mark.parametrize("raw, policy", [("always", "always"), ("EVERYSEC", "everysec"), ("no", "no"), ("", "always")])
def test_the_fsync_policy_is_always_unless_set(raw, policy):
    assert Config.from_env({"GROWTH_FSYNC": raw}).fsync == policy
