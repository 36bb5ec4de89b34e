"""schemathesis's pytest plugin, for the fuzz only. Importing it takes seconds (it imports Hypothesis), so
pyproject.toml keeps it from loading (``-p no:schemathesis``, and ``-p no:hypothesispytest``, which imports
Hypothesis at the end of every run; Hypothesis runs without it) and the fast loop never pays for it;
collecting a module here registers it."""

from schemathesis.pytest import plugin


def pytest_configure(config):
    if not config.pluginmanager.is_registered(plugin):
        config.pluginmanager.register(plugin, "schemathesis (tests/fuzz)")
