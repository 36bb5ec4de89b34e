"""What tests/scripts/test_bench.py tests, where it takes a process: a server, redis-server or a command line; the
names these tests share with those in process come from tests/scripts/test_bench.py."""

import subprocess
import sys

import pytest

from growth_gevent.testing import wait_for
from scripts.benchmark import procfs, runners
from scripts.benchmark.servers import RECORD_PATH, put_record, url
from tests.helpers.load_tools import AB_SMOKE_CONCURRENCY, AB_SMOKE_REQUESTS, BURN_IN_CHILD, MISSING_RECORD_PATH


@pytest.fixture
def small_ab(monkeypatch):
    monkeypatch.setattr(runners, "AB_REQUESTS", AB_SMOKE_REQUESTS)
    monkeypatch.setattr(runners, "AB_CONCURRENCY", AB_SMOKE_CONCURRENCY)


@pytest.mark.parametrize("path, non_2xx", [(RECORD_PATH, 0), (MISSING_RECORD_PATH, AB_SMOKE_REQUESTS)])
def test_ab_figures_count_every_request_and_every_answer_not_2xx(servers, small_ab, path, non_2xx):
    server = servers()
    put_record(server)
    result = runners.ab(url(server) + path)
    assert result["requests"] == AB_SMOKE_REQUESTS
    assert (result["non_2xx"], result["failed"], result["errors"]) == (non_2xx, 0, non_2xx)
    assert 0 <= result["p50_us"] <= result["p90_us"] <= result["p99_us"] <= result["max_us"]
    assert result["rps"] > 0


@pytest.mark.parametrize("child", ["lives", "ends"])
def test_cpu_seconds_counts_what_the_children_spend(child):
    """A supervisor spends next to nothing; its workers, running or ended and waited for, spend the CPU."""
    parent = subprocess.Popen([sys.executable, "-c", BURN_IN_CHILD, child], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        parent.stdout.readline()
        assert wait_for(lambda: procfs.cpu_seconds(parent.pid) >= 0.25, timeout=10, interval=0.02)
    finally:
        parent.communicate("\n", timeout=10)
