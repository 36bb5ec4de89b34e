"""What a Redis crash would lose, said at start-up; Redis coming back without its data, noticed (the log,
/metrics), on real redis-server processes killed with SIGKILL."""

import logging

import gevent
import pytest
import webtest

from growth_gevent.api.app import create_app
from growth_gevent.testing import RedisServer, wait_for
from tests.helpers.redis_support import KEY, open_store
from tests.helpers.support import SAMPLE

WATCH_SECONDS = 15  # a few of the watch's checks, every 2 s


@pytest.fixture
def started():
    """``started(*settings)``: a redis-server with these settings; every one started is stopped after."""
    servers = []

    def start(*settings):
        server = RedisServer(settings=settings).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def persistence_lines(server, caplog):
    """The lines that a store's start-up check logs about the persistence of ``server``."""
    caplog.set_level(logging.INFO, logger="growth_gevent")
    store = open_store(server)
    try:
        store.ping()
    finally:
        store.close()
    return [(record.levelname, record.getMessage()) for record in caplog.records
            if "persistence" in record.getMessage()]


@pytest.mark.parametrize("settings, level, says", [
    ((), "WARNING", "appendonly no and save '': a Redis crash loses every record"),
    (("--save", "3600 1 300 100"), "WARNING", ("appendonly no, save '3600 1 300 100': a Redis crash loses every "
                                              "write since the last RDB snapshot (up to 3600 s of them")),
    (("--appendonly", "yes", "--appendfsync", "everysec"), "WARNING",
     "appendfsync everysec: a Redis crash loses up to ~1 s of acknowledged writes"),
    (("--appendonly", "yes", "--appendfsync", "no"), "WARNING",
     "appendfsync no: a Redis crash loses the acknowledged writes that the OS had not written to disk yet"),
    (("--appendonly", "yes", "--appendfsync", "always"), "INFO",
     "appendonly yes, appendfsync always: a Redis crash loses no acknowledged write"),
    (("--rename-command", "CONFIG", ""), "WARNING", ("Redis persistence could not be checked (CONFIG GET: unknown "
                                                    "command 'CONFIG'")),
])
def test_start_up_says_what_a_redis_crash_would_lose(started, caplog, settings, level, says):
    lines = persistence_lines(started(*settings), caplog)
    assert len(lines) == 1, lines
    assert lines[0][0] == level and says in lines[0][1], lines


def test_the_persistence_is_said_once_per_redis_run_not_by_every_store(started, caplog):
    server = started()
    assert len(persistence_lines(server, caplog)) == 1
    assert len(persistence_lines(server, caplog)) == 1  # the second store said nothing more
    server.stop()
    server.start()
    assert len(persistence_lines(server, caplog)) == 2  # a new run, maybe with other settings


def losses_seen(store, count):
    return gevent.sleep(0.05) or store.health().data_losses == count


def test_a_redis_killed_and_restarted_empty_is_noticed_in_the_log_and_the_metrics(started, caplog, config):
    server = started()
    store = open_store(server)
    try:
        store.ping()
        store.put(KEY, 1)
        client = webtest.TestApp(create_app(store, config))
        assert "growth_store_data_lost_total 0.0" in client.get("/metrics").text
        server.stop()  # SIGKILL
        server.start()
        wait_for(lambda: losses_seen(store, 1), WATCH_SECONDS)
        assert "growth_store_data_lost_total 1.0" in client.get("/metrics").text
        assert store.get(KEY) is None
    finally:
        store.close()
    errors = [record.getMessage() for record in caplog.records if record.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].startswith("Redis lost its data: it restarted (run id "), errors
    assert "without it; every record written before is gone" in errors[0]


@pytest.mark.parametrize("options, lose, said", [
    ((), lambda server: server.flush(), "Redis lost its data: it was flushed, or its keys deleted"),
    (("--rename-command", "INFO", ""), lambda server: (server.stop(), server.start()),
     "Redis lost its data: it restarted without it, or was flushed"),
], ids=["flushed", "restarted, without INFO"])
def test_a_loss_is_noticed_however_it_came_and_however_much_redis_says(started, caplog, options, lose, said):
    server = started(*options)
    store = open_store(server)
    try:
        store.ping()
        lose(server)
        wait_for(lambda: losses_seen(store, 1), WATCH_SECONDS)
    finally:
        store.close()
    assert said in caplog.text


def test_a_redis_that_persists_its_writes_comes_back_with_them_and_no_loss_is_said(started, caplog):
    caplog.set_level(logging.INFO, logger="growth_gevent")
    server = started("--appendonly", "yes", "--appendfsync", "always")
    store = open_store(server)
    try:
        store.ping()
        store.put(KEY, 1)
        server.stop()  # SIGKILL
        server.start()
        wait_for(lambda: gevent.sleep(0.05) or "with its data" in caplog.text, WATCH_SECONDS)
        assert store.health().data_losses == 0
        assert store.get(KEY) == 1
    finally:
        store.close()
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


def metric(server, name):
    status, body = server.request("GET", "/metrics")
    assert status == 200
    return [line for line in body.decode().splitlines() if line.startswith(name + " ")]


@pytest.mark.parametrize("preload", [False, True])
def test_a_server_notices_its_redis_restarted_empty_with_or_without_a_preload(started, servers, preload):
    redis_server = started()
    env = {"GROWTH_STORE": redis_server.url, **({"GROWTH_PRELOAD": str(SAMPLE)} if preload else {})}
    server = servers(**env)
    if preload:
        server.wait_until_complete()
    assert server.request_json("PUT", "/api/v1/growth/A/B/1", {"value": 1})[0] == 201
    assert metric(server, "growth_store_data_lost_total") == ["growth_store_data_lost_total 0.0"]
    redis_server.stop()  # SIGKILL
    redis_server.start()
    server.wait_for_line("Redis lost its data: it restarted", WATCH_SECONDS)
    assert metric(server, "growth_store_data_lost_total") == ["growth_store_data_lost_total 1.0"]
    assert server.request("GET", "/api/v1/growth/A/B/1")[0] == 404
    if preload:  # loaded again, and the loss said all the same
        wait_for(lambda: server.request_json("GET", "/api/v1/growth/size")[1]["size"] == 9, WATCH_SECONDS)
