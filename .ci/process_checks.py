"""Checks of how the project is kept, not of what it does, run by .ci/run before the tests: every commit
subject from CHECKED_SINCE on is one short line (git's tools and GitHub cut longer ones), and the README stays
a newcomer's five minutes (reference lives in docs/). Exit 1 naming what broke a rule."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHECKED_SINCE = "26b22d9"  # the last commit landed before the subject rule held
SUBJECT_LIMIT = 72
README_LIMIT_BYTES = 12_000


def git(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True, timeout=30, check=True)


def long_subjects() -> list[str]:
    # A clone too shallow to hold CHECKED_SINCE holds only commits after it: all of them are checked.
    held = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{CHECKED_SINCE}^{{commit}}"], cwd=ROOT,
                          capture_output=True, timeout=30).returncode == 0
    log = git("log", "--format=%h %s", f"{CHECKED_SINCE}..HEAD" if held else "HEAD").stdout
    return [line for line in log.splitlines() if len(line.partition(" ")[2]) >= SUBJECT_LIMIT]


def main() -> int:
    problems = [f"commit subject of {SUBJECT_LIMIT} characters or more: {line}" for line in long_subjects()]
    readme = len((ROOT / "README.md").read_bytes())
    if readme >= README_LIMIT_BYTES:
        problems.append(f"README.md is {readme} bytes, the limit is {README_LIMIT_BYTES}")
    for problem in problems:
        print(f".ci/process_checks: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
