"""The README's walkthrough: its steps, and running them against a live server."""

import re
import subprocess

from tests.helpers.support import ROOT

README = (ROOT / "README.md").read_text()
WALKTHROUGH = re.search(r"<!-- walkthrough -->\n```console\n(.*?)```\n<!-- /walkthrough -->", README, re.S)


def walkthrough_steps():
    steps = []
    for block in WALKTHROUGH.group(1).strip().split("\n\n"):
        command, _, output = block.partition("\n")
        steps.append((command.removeprefix("$ "), output + "\n"))
    return steps


def run_walkthrough(port):
    """Run every walkthrough command against the fresh server on ``port`` (tests/test_docker_live.py's
    container too); each must print what the README shows."""
    for command, expected in walkthrough_steps():
        command = command.replace("localhost:8080", f"127.0.0.1:{port}")
        result = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=30)
        assert result.stdout == expected, command
