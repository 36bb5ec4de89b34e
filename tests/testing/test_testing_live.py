"""growth_gevent.testing is importable by tests and the bench alike, and stays out of the service's way."""

import contextlib
import socket
import subprocess
import sys

import pytest

from growth_gevent.testing import LiveServer, RedisServer, free_port, redis_server
from growth_gevent.testing.redis_server import EPHEMERAL_RANGE
from tests.helpers.support import ROOT

LOADED = "import sys; {}; print(' '.join(sorted(m for m in sys.modules if m in {!r})))"


def modules_loaded_by(statement, watched):
    """Which of ``watched`` a fresh interpreter has loaded after ``statement``."""
    run = subprocess.run([sys.executable, "-c", LOADED.format(statement, set(watched))], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return run.stdout.split()


def test_the_service_does_not_import_the_testing_helpers():
    assert modules_loaded_by("import growth_gevent.cli", ["growth_gevent.testing"]) == []


def test_the_testing_helpers_do_not_import_pytest():
    assert modules_loaded_by("import growth_gevent.testing", ["pytest", "_pytest"]) == []


def test_free_ports_are_below_the_range_the_kernel_hands_out_and_differ():
    low = int(EPHEMERAL_RANGE.read_text().split()[0])
    ports = [free_port() for _ in range(50)]
    assert all(1024 <= port < low for port in ports)
    assert len(set(ports)) > 40


def test_free_port_gives_up_when_every_port_below_the_range_is_taken(tmp_path, monkeypatch):
    (tmp_path / "range").write_text("1025\t60999\n")  # below it: port 1024 alone
    monkeypatch.setattr(redis_server, "EPHEMERAL_RANGE", tmp_path / "range")
    with socket.socket() as taken:
        with contextlib.suppress(OSError):  # taken already, by another process
            taken.bind(("127.0.0.1", 1024))
        with pytest.raises(RuntimeError, match=r"no free loopback port in range\(1024, 1025\) after 1000 tries"):
            free_port()


def test_a_redis_server_that_cannot_bind_says_why():
    server = RedisServer()
    with socket.socket() as taken:  # bound, not listening: a connection to it is refused
        taken.bind(("127.0.0.1", server.port))
        with pytest.raises(RuntimeError, match=f"exited at start on port {server.port}: .*Address already in use"):
            server.start()


def test_a_server_that_could_not_be_launched_stops_without_a_second_error(tmp_path):
    server = LiveServer(command=[str(tmp_path / "no-such-python")])
    with pytest.raises(FileNotFoundError):
        server.start()
    server.stop()  # as a fixture's teardown calls it: nothing to stop, and the first error stands
