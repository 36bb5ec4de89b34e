"""Redis behind Sentinel and writes confirmed by replicas, in process: the URL, the settings, the table of
what each failure loses, and WAIT shared by concurrent writes (against the fake Redis). The real
processes (a primary, a replica, three Sentinels) are in tests/stores/test_redis_sentinel_live.py."""

import logging

import pytest
import redis

from growth_gevent.config import Config, ConfigError
from growth_gevent.stores.redis.persistence import PersistenceWatch, loss_table
from growth_gevent.stores.redis.sentinel import SentinelURL
from growth_gevent.stores.redis.shared_connection import NotReplicated, SharedConnection
from tests.helpers.redis_support import TIMEOUT, in_greenlets


@pytest.mark.parametrize("url, sentinels, service, options", [
    ("redis+sentinel://10.0.0.1:26379,10.0.0.2:26380/growth/2", (("10.0.0.1", 26379), ("10.0.0.2", 26380)),
     "growth", {"db": 2}),
    ("redis+sentinel://sentinel/growth", (("sentinel", 26379),), "growth", {}),
    ("redis+sentinel://:p%40ss@[::1]:26379/my%20service", (("::1", 26379),), "my service", {"password": "p@ss"}),
    ("rediss+sentinel://user:secret@a:1,b:2/growth/0", (("a", 1), ("b", 2)), "growth",
     {"username": "user", "password": "secret", "db": 0, "connection_class": redis.connection.SSLConnection}),
])
def test_a_sentinel_url_lists_the_sentinels_the_service_and_the_data_nodes_options(url, sentinels, service,
                                                                                   options):
    parsed = SentinelURL.parse(url)
    assert (parsed.sentinels, parsed.service, parsed.options) == (sentinels, service, options)


def test_the_credentials_are_the_data_nodes_and_tls_is_for_both():
    parsed = SentinelURL.parse("rediss+sentinel://user:secret@a:1/growth/3")
    assert parsed.node(("10.0.0.9", 6379)) == {"host": "10.0.0.9", "port": 6379, "username": "user",
                                               "password": "secret", "db": 3,
                                               "connection_class": redis.connection.SSLConnection}
    assert parsed.sentinel(("a", 1)) == {"host": "a", "port": 1, "connection_class": redis.connection.SSLConnection}


@pytest.mark.parametrize("url, says", [
    ("redis+sentinel://a:1", "names the service after the Sentinels"),
    ("redis+sentinel://a:1/", "names the service after the Sentinels"),
    ("redis+sentinel://a:x/growth", "lists Sentinels as host:port"),
    ("redis+sentinel://a:1,,b:2/growth", "lists Sentinels as host:port"),
    ("redis+sentinel://a:70000/growth", "lists Sentinels as host:port"),
    ("redis+sentinel://a:1/growth/x", "the database of a Sentinel URL is a number"),
])
def test_a_bad_sentinel_url_is_refused_saying_what_is_wrong(url, says):
    with pytest.raises(ValueError, match=says):
        SentinelURL.parse(url)


def test_growth_store_takes_a_sentinel_url_and_the_replica_settings():
    config = Config.from_env({"GROWTH_STORE": "redis+sentinel://a:1,b:2/growth/0", "GROWTH_REDIS_MIN_REPLICAS": "1",
                              "GROWTH_REDIS_REPLICA_TIMEOUT": "0.25"})
    assert (config.store_url, config.redis_min_replicas, config.redis_replica_timeout) == (
        "redis+sentinel://a:1,b:2/growth/0", 1, 0.25)
    assert (Config().redis_min_replicas, Config().redis_replica_timeout) == (0, 0.5)


def test_the_replicas_confirmation_must_be_shorter_than_the_redis_timeout():
    with pytest.raises(ConfigError, match="GROWTH_REDIS_REPLICA_TIMEOUT=2 must be below GROWTH_REDIS_TIMEOUT=2"):
        Config.from_env({"GROWTH_STORE": "redis://a", "GROWTH_REDIS_MIN_REPLICAS": "1",
                         "GROWTH_REDIS_REPLICA_TIMEOUT": "2"})


def test_the_loss_table_has_a_row_per_replica_count_and_appendfsync_and_marks_the_setup():
    table = loss_table(1, "everysec").splitlines()
    assert len(table) == 1 + 2 * 4
    assert [line for line in table if line.endswith("<- this setup")] == [table[6]]
    assert table[6].startswith("1+ ") and "everysec" in table[6] and "nothing acknowledged" in table[6]
    assert "what was not yet replicated" in table[1] and table[1].startswith("0 ")
    assert not any(line.endswith("<- this setup") for line in loss_table(0, None).splitlines())



def test_the_loss_table_is_logged_a_line_a_row_not_one_line_of_escaped_newlines(caplog):
    """A logfmt line writes a newline as the two characters \\n: the table was one unreadable line."""
    watch = PersistenceWatch(lambda *command: b"# Replication\r\nconnected_slaves:1\r\n", min_replicas=1)
    with caplog.at_level(logging.INFO, logger="growth_gevent"):
        watch._say_losses("everysec")
    messages = [record.getMessage() for record in caplog.records]
    assert not any("\n" in message for message in messages)
    assert messages[0] == ("Redis: what a failure loses of the acknowledged writes (GROWTH_REDIS_MIN_REPLICAS=1, "
                           "1 replicas connected; see docs/durability.md):")
    assert messages[1:] == [f"  {row}" for row in loss_table(1, "everysec").splitlines()]

@pytest.fixture
def replicated(fake):
    """A shared connection whose writes wait for one replica; the fake's WAIT answers ``fake.replicas``."""
    fake.replicas = 1
    answer = fake.reply
    fake.reply = lambda command, subscribed: (
        fake.replicas if command[0] == b"WAIT" else b"OK" if command[0] == b"SET" else answer(command, subscribed))
    shared = SharedConnection(fake.connect, TIMEOUT, replicas=1, wait_seconds=0.1)
    yield shared
    shared.close()


def test_concurrent_writes_share_a_wait_sent_after_their_answers(fake, replicated):
    writes = iter(range(50))
    assert in_greenlets(50, lambda: replicated.write("SET", "k", str(next(writes)))) == [b"OK"] * 50
    waits = [index for index, command in enumerate(fake.commands) if command[0] == b"WAIT"]
    assert 1 <= len(waits) <= 2, fake.commands  # one for the writes answered together, maybe one more
    assert fake.commands[waits[-1]] == (b"WAIT", b"1", b"100")
    assert max(index for index, command in enumerate(fake.commands) if command[0] == b"SET") < waits[-1]


def test_a_write_too_few_replicas_confirmed_is_not_acknowledged(fake, replicated):
    fake.replicas = 0
    with pytest.raises(NotReplicated, match=r"the write was made on the primary, but 0 of the 1 replicas required "
                                            r"\(GROWTH_REDIS_MIN_REPLICAS\) confirmed it within 0.1 s: it may still "
                                            r"be applied, or lost if the primary fails"):
        replicated.write("SET", "k", "v")
    assert replicated.call("ECHO", "reads do not wait") == b"reads do not wait"
    assert [command[0] for command in fake.commands] == [b"SET", b"WAIT", b"ECHO"]
