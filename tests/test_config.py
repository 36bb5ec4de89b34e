import pytest

from growth_gevent.config import (DEFAULT_BULK_CHUNK_RECORDS, DEFAULT_MAX_BODY_BYTES, Config,
                                  ConfigError)


def test_defaults_when_the_environment_is_empty():
    assert Config.from_env({}) == Config(host="0.0.0.0", port=8080, max_body_bytes=16 * 1024 * 1024,
                                         access_log=False, shutdown_timeout=20.0,
                                         bulk_chunk_records=DEFAULT_BULK_CHUNK_RECORDS,
                                         snapshot_path=None, snapshot_interval=60.0, preload_path=None)
    assert DEFAULT_MAX_BODY_BYTES == 16 * 1024 * 1024


def test_every_variable_is_read():
    config = Config.from_env({"HOST": "127.0.0.1", "PORT": "5000", "GROWTH_MAX_BODY_BYTES": "100",
                              "GROWTH_ACCESS_LOG": "on", "GROWTH_SHUTDOWN_TIMEOUT": "2.5",
                              "GROWTH_BULK_CHUNK_RECORDS": "10", "GROWTH_SNAPSHOT": "/d/s",
                              "GROWTH_SNAPSHOT_INTERVAL": "0.5", "GROWTH_PRELOAD": "/d/p.json"})
    assert config == Config("127.0.0.1", 5000, 100, True, 2.5, 10, "/d/s", 0.5, "/d/p.json")


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
])
def test_a_bad_value_names_the_variable(name, raw):
    with pytest.raises(ConfigError, match=name):
        Config.from_env({name: raw})


def test_the_memory_store_is_the_default_with_one_worker():
    config = Config.from_env({})
    assert (config.redis_url, config.workers) == (None, 1)
    assert Config.from_env({"GROWTH_STORE": "memory"}).redis_url is None


def test_a_redis_url_selects_the_redis_store_with_its_settings():
    config = Config.from_env({"GROWTH_STORE": "redis://h:6380/2", "WEB_CONCURRENCY": "4",
                              "GROWTH_REDIS_POOL_SIZE": "9", "GROWTH_REDIS_TIMEOUT": "0.5",
                              "GROWTH_REDIS_TLS_VERIFY": "off"})
    assert (config.redis_url, config.workers, config.redis_pool_size, config.redis_timeout,
            config.redis_tls_verify) == ("redis://h:6380/2", 4, 9, 0.5, False)


def test_growth_store_redis_reads_herokus_redis_url():
    config = Config.from_env({"GROWTH_STORE": "redis", "REDIS_URL": "rediss://u:p@h:1/0"})
    assert config.redis_url == "rediss://u:p@h:1/0"


@pytest.mark.parametrize("environ, name", [
    ({"GROWTH_STORE": "redis"}, "REDIS_URL"),
    ({"GROWTH_STORE": "redis", "REDIS_URL": "h:6379"}, "REDIS_URL"),
    ({"GROWTH_STORE": "postgres://h/db"}, "GROWTH_STORE"),
    ({"WEB_CONCURRENCY": "0"}, "WEB_CONCURRENCY"),
    ({"WEB_CONCURRENCY": "two"}, "WEB_CONCURRENCY"),
    ({"GROWTH_STORE": "redis://h", "GROWTH_REDIS_POOL_SIZE": "0"}, "GROWTH_REDIS_POOL_SIZE"),
    ({"GROWTH_STORE": "redis://h", "GROWTH_REDIS_TIMEOUT": "0"}, "GROWTH_REDIS_TIMEOUT"),
    ({"GROWTH_STORE": "redis://h", "GROWTH_REDIS_TLS_VERIFY": "maybe"}, "GROWTH_REDIS_TLS_VERIFY"),
])
def test_a_bad_store_setting_names_the_variable(environ, name):
    with pytest.raises(ConfigError, match=name):
        Config.from_env(environ)


def test_several_workers_on_the_memory_store_are_refused_with_the_reason():
    with pytest.raises(ConfigError, match="WEB_CONCURRENCY=2 needs a shared store: with the in-memory store "
                                          "each worker process would hold its own data"):
        Config.from_env({"WEB_CONCURRENCY": "2"})


def test_snapshots_are_refused_with_redis_whose_persistence_is_its_own():
    with pytest.raises(ConfigError, match="GROWTH_SNAPSHOT is for the in-memory store"):
        Config.from_env({"GROWTH_STORE": "redis://h", "GROWTH_SNAPSHOT": "/d/s"})
