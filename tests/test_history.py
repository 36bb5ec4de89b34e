"""Commit subjects are one short line: under 72 characters (git's tools and GitHub cut longer ones), for every
commit from CHECKED_SINCE on; those before it stay as they landed."""

import subprocess

from support import ROOT

CHECKED_SINCE = "26b22d9"  # the last commit landed before this test held the rule
SUBJECT_LIMIT = 72


def git(*arguments):
    return subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True, timeout=30)


def test_every_commit_subject_since_the_rule_is_under_72_characters():
    # A clone too shallow to hold CHECKED_SINCE holds only commits after it: all of them are checked.
    held = git("rev-parse", "--verify", "--quiet", f"{CHECKED_SINCE}^{{commit}}").returncode == 0
    log = git("log", "--format=%h %s", f"{CHECKED_SINCE}..HEAD" if held else "HEAD")
    assert log.returncode == 0, log.stderr
    too_long = [line for line in log.stdout.splitlines() if len(line.partition(" ")[2]) >= SUBJECT_LIMIT]
    assert too_long == []
