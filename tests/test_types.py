"""What `mypy` checks (.ci/run runs it with no arguments, so pyproject.toml's [tool.mypy] is the whole of it):
every module of the package, every function annotated and its body checked, and the contracts between
layers as `--strict` would. Read from the settings rather than by running mypy here: .ci/run runs it."""

import importlib.util
import tomllib

from tests.helpers.support import ROOT

MYPY = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
OVERRIDES = MYPY.get("overrides", [])
# The modules that other layers are written against.
CONTRACTS = {
    "growth_gevent.config",
    "growth_gevent.core.logs",
    "growth_gevent.core.loop",
    "growth_gevent.core.records",
    "growth_gevent.core.version",
    "growth_gevent.durability.journal",
    "growth_gevent.durability.journal_format",
    "growth_gevent.durability.replay",
    "growth_gevent.http.head",
    "growth_gevent.http.responses",
    "growth_gevent.stores.base",
}
# What `--strict` turns on, as mypy takes it per module (it takes `strict` itself only globally).
STRICT_PER_MODULE = {
    "disallow_any_generics": True,
    "disallow_subclassing_any": True,
    "disallow_untyped_calls": True,
    "disallow_untyped_defs": True,
    "disallow_incomplete_defs": True,
    "disallow_untyped_decorators": True,
    "warn_return_any": True,
    "implicit_reexport": False,
    "extra_checks": True,
}
# ... and what it turns on that mypy takes only globally, or that holds for every module here.
STRICT_GLOBAL = {"check_untyped_defs": True, "warn_redundant_casts": True, "warn_unused_ignores": True,
                 "strict_equality": True, "disallow_untyped_defs": True, "disallow_incomplete_defs": True}
# Third-party packages that ship no type information: the only imports mypy may skip.
UNTYPED_PACKAGES = {"gevent", "gevent.*", "swagger_ui_bundle"}


def _modules(override):
    return override["module"] if isinstance(override["module"], list) else [override["module"]]


def test_mypy_checks_the_whole_package_every_function_body_and_every_signature():
    assert MYPY["files"] == ["growth_gevent"]
    assert {name: MYPY.get(name) for name in STRICT_GLOBAL} == STRICT_GLOBAL
    assert "follow_imports" not in MYPY and "ignore_missing_imports" not in MYPY


def test_the_contracts_are_checked_strictly():
    strict = set()
    for override in OVERRIDES:
        if all(override.get(name) == value for name, value in STRICT_PER_MODULE.items()):
            strict.update(_modules(override))
    assert CONTRACTS <= strict


def test_only_packages_without_types_may_go_unchecked():
    skipped = {module for override in OVERRIDES if override.get("ignore_missing_imports") for module in
               _modules(override)}
    assert skipped == UNTYPED_PACKAGES


def test_every_module_an_override_names_exists():
    # A module renamed or moved would leave its override in force on nothing, silently.
    named = {module for override in OVERRIDES for module in _modules(override)
             if module.startswith("growth_gevent")}
    assert [module for module in sorted(named) if importlib.util.find_spec(module) is None] == []
