"""What tests/scripts/test_generate_data.py tests, where it takes a process: the generator's command line."""

import subprocess
import sys

from tests.helpers.support import ROOT, SAMPLE


def test_the_committed_sample_is_what_the_generator_writes(tmp_path):
    output = tmp_path / "sample.json"
    subprocess.run([sys.executable, "scripts/generate_data.py", "--records", "9", "--indent", "4",
                    str(output)], cwd=ROOT, check=True, capture_output=True)
    assert output.read_bytes() == SAMPLE.read_bytes()
