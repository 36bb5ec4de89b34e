"""The package by layer: each subpackage imports only the layers below it (its docstring says which), and
the modules at the top (the cli package, config, initial_data, service) may import any of them; every module,
of the package or of the tests, is short."""

import ast
import re

import pytest

from tests.helpers.source import parsed, walked
from tests.helpers.support import ROOT

PACKAGE = ROOT / "growth_gevent"
# layer -> the layers it may import, besides itself; every import of growth_gevent's is checked
ALLOWED = {
    "core": set(),
    "stores": {"core"},
    "durability": {"stores", "core"},
    "http": {"core"},
    "ops": {"durability", "stores", "core"},
    "api": {"http", "ops", "stores", "core"},
}
TOP = {"__init__", "__main__", "cli", "config", "initial_data", "service", "testing"}


def _layer(module):
    """'growth_gevent.api.app' -> 'api'; a top-level module -> its own name."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path):
    """Every growth_gevent module this file imports, anywhere in it, as an absolute name."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in walked(parsed(path)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith("growth_gevent"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                yield ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith("growth_gevent"):
                yield node.module


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if _layer(_module_name(p)) not in TOP)


def test_every_module_sits_in_a_known_layer_or_at_the_top():
    layers = {_layer(_module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert layers <= set(ALLOWED) | TOP


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_layer_imports_one_above_it(path):
    layer = _layer(_module_name(path))
    for imported in _imports(path):
        target = _layer(imported)
        assert target == layer or target in ALLOWED[layer], f"{layer} imports {imported}"


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_says_what_it_may_import(layer):
    docstring = ast.get_docstring(parsed(PACKAGE / layer / "__init__.py"))
    said = re.search(r"^May import: (.*)\.$", docstring, re.M)
    if ALLOWED[layer]:
        assert set(re.findall(r"``(\w+)``", said.group(1))) == ALLOWED[layer]
    else:
        assert said is None and "Imports nothing of growth_gevent's." in docstring


MODULE_LINES_MOST = 450  # past it a module has two jobs: split it along the seam between them


@pytest.mark.parametrize("path", sorted([*PACKAGE.rglob("*.py"), *(ROOT / "tests").rglob("*.py")]),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_stays_short(path):
    """The package's modules and the tests' alike: a test module mirrors one module of the package."""
    assert len(path.read_text().splitlines()) <= MODULE_LINES_MOST
