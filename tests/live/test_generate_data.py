"""What tests/test_generate_data.py tests, where it takes a process: a server, redis-server or a command line; the
names these tests share with those in process come from tests/test_generate_data.py."""

# ruff: noqa: F405 (names from tests/test_generate_data.py)

import subprocess
import sys

from tests.test_generate_data import *  # noqa: F403

from support import ROOT, SAMPLE


def test_the_committed_sample_is_what_the_generator_writes(tmp_path):
    output = tmp_path / "sample.json"
    subprocess.run([sys.executable, "scripts/generate_data.py", "--records", "9", "--indent", "4",
                    str(output)], cwd=ROOT, check=True, capture_output=True)
    assert output.read_bytes() == SAMPLE.read_bytes()
