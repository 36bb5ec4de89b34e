"""Start-up as a user meets it: bad settings stop the process with a message naming the variable."""

import subprocess
import sys

import socket

import pytest

from conftest import ROOT


@pytest.mark.parametrize("name, raw", [("PORT", "abc"), ("GROWTH_MAX_BODY_BYTES", "-5"),
                                       ("GROWTH_ACCESS_LOG", "sometimes")])
def test_a_bad_setting_stops_start_up(name, raw):
    result = subprocess.run([sys.executable, "-m", "growth_gevent"], cwd=ROOT, env={name: raw},
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert f"configuration error: {name}" in result.stderr


def test_a_port_in_use_stops_start_up():

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "growth_gevent"], cwd=ROOT,
                                env={"HOST": "127.0.0.1", "PORT": str(port)},
                                capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
