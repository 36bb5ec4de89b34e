"""tests/helpers/serial.py under pytest-xdist: a run of two workers on a small suite of its own, whose tests write
down when they ran and where."""

import json
import os
import subprocess
import sys

from tests.helpers.support import ROOT

CONFTEST = """
import pytest

from tests.helpers.serial import pytest_runtest_protocol, serial_first


def pytest_configure(config):
    config.addinivalue_line("markers", "serial: runs alone")


def pytest_collection_modifyitems(config, items):
    serial_first(config, items)
"""
TESTS = """
import json
import os
import time

import pytest

# pytest-xdist hands each of two workers 5 consecutive tests of 45 first (a quarter of its share), then a few
# at a time: in collection order, 2 and 7 would go to different workers.
SERIAL = [2, 7, 40]


def ran(name, seconds):
    started = time.monotonic()
    time.sleep(seconds)  # the test's work: long enough for a test on the other worker to run beside it
    with open(os.environ["RAN"], "a") as ran:
        ran.write(json.dumps([name, os.environ["PYTEST_XDIST_WORKER"], started, time.monotonic()]) + "\\n")


@pytest.mark.parametrize("number", [pytest.param(n, marks=pytest.mark.serial) if n in SERIAL else n for n in range(45)])
def test_work(number):
    if number in SERIAL:
        ran(f"serial {number}", 0.2)
    else:
        ran(f"other {number}", 0.05)
"""


def overlap(first, second):
    return first[2] < second[3] and second[2] < first[3]


def test_serial_tests_run_on_one_worker_beside_no_other_test_while_the_others_run_side_by_side(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_suite.py").write_text(TESTS)
    ran = tmp_path / "ran.jsonl"
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-q", "test_suite.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "RAN": str(ran)})
    assert run.returncode == 0, run.stdout + run.stderr
    tests = [json.loads(line) for line in ran.read_text().splitlines()]
    serial = [test for test in tests if test[0].startswith("serial")]
    others = [test for test in tests if test[0].startswith("other")]
    assert (len(serial), len(others)) == (3, 42)
    assert len({worker for _, worker, _, _ in serial}) == 1
    assert [(one[0], test[0]) for one in serial for test in tests if test is not one and overlap(one, test)] == []
    assert any(overlap(one, other) for one in others for other in others if one is not other)
