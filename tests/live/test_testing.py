"""growth_gevent.testing is importable by tests and the bench alike, and stays out of the service's way."""

import subprocess
import sys

from support import ROOT

LOADED = "import sys; {}; print(' '.join(sorted(m for m in sys.modules if m in {!r})))"


def modules_loaded_by(statement, watched):
    """Which of ``watched`` a fresh interpreter has loaded after ``statement``."""
    run = subprocess.run([sys.executable, "-c", LOADED.format(statement, set(watched))], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return run.stdout.split()


def test_the_service_does_not_import_the_testing_helpers():
    assert modules_loaded_by("import growth_gevent.cli", ["growth_gevent.testing"]) == []


def test_the_testing_helpers_do_not_import_pytest():
    assert modules_loaded_by("import growth_gevent.testing", ["pytest", "_pytest"]) == []
