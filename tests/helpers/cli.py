"""What the command line's tests share: the sizes of their files, and ``load`` run as a process against a live
server."""

import os
import subprocess
import sys

from growth_gevent.testing import LiveServer
from tests.helpers.support import ROOT

BIG = 42450
RECORDS = 5000


def run_upload(*arguments: object, input: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """``load`` with ``arguments`` (files and flags), in a process of its own; ``input`` its stdin."""
    return subprocess.run([sys.executable, "-m", "growth_gevent", "load", *map(str, arguments)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, **env},
                          check=False, input=input)


def url_of(server: LiveServer) -> str:
    return f"http://127.0.0.1:{server.port}"


def size_of(server: LiveServer) -> int:
    return server.request_json("GET", "/api/v1/growth/size")[1]["size"]
