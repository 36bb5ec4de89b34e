"""A short run of each k6 script in scripts/k6 against a live server, so that the scripts and their
thresholds cannot rot: k6 exits 0 only when the script runs and every threshold holds (99 when one is
crossed, 107 on a script error). A few VUs for a few seconds each; scripts/bench runs them at full load."""


from tests.helpers.load_tools import SCRIPTS, SMOKE_RUNS


def test_every_script_is_smoke_tested():
    assert sorted(SMOKE_RUNS) == sorted(path.name for path in SCRIPTS.glob("*.js"))


