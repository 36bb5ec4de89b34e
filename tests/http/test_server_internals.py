"""Every name of gevent's that growth_gevent/http/ touches, found by reading its code (an AST scan) and
listed here, each checked against the gevent installed: an upgrade that moves or renames one fails here,
by name, rather than as a subtle change of behaviour on the wire. None of them is private.

What the scan counts as touched: an attribute of a gevent module or class imported by name
(``gevent.sleep``, ``WSGIServer.get_listener``), and what a subclass of a gevent class reaches on its
instances without defining it (``self.pool``, ``super().do_read()``, ``server.environ`` from the
connection) or overrides (``handler_class``, ``do_read``).
"""

import ast
import importlib
import inspect

import pytest
from gevent import pywsgi

from growth_gevent.http.server import GrowthServer
from tests.helpers.source import parsed, walked
from tests.helpers.support import ROOT

HTTP = ROOT / "growth_gevent" / "http"
# (where it lives, the name touched): the whole of what http/ relies on in gevent.
TOUCHED = {
    ("gevent", "sleep"), ("gevent", "spawn"), ("gevent", "spawn_later"),
    ("gevent", "monkey"), ("gevent.monkey", "get_original"),
    ("gevent.baseserver", "parse_address"),
    ("gevent.pool", "Pool"),
    ("gevent.pywsgi", "WSGIServer"),
    # The server: constructed as documented, its hooks, and what it holds.
    ("gevent.pywsgi.WSGIServer", "__init__"), ("gevent.pywsgi.WSGIServer", "handler_class"),
    ("gevent.pywsgi.WSGIServer", "do_read"), ("gevent.pywsgi.WSGIServer", "get_listener"),
    ("gevent.pywsgi.WSGIServer", "application"),
    ("gevent.pywsgi.WSGIServer", "close"), ("gevent.pywsgi.WSGIServer", "closed"),
    ("gevent.pywsgi.WSGIServer", "stop_accepting"), ("gevent.pywsgi.WSGIServer", "start_accepting"),
    ("gevent.pywsgi.WSGIServer", "pool"), ("gevent.pywsgi.WSGIServer", "environ"),
}


def _modules():
    return {path.name: parsed(path) for path in sorted(HTTP.glob("*.py"))}


def _gevent_names(tree):
    """The names a module binds to gevent's modules and objects: {"WSGIServer": "gevent.pywsgi.WSGIServer"}."""
    bound = {}
    for node in walked(tree):
        if isinstance(node, ast.Import):
            bound.update((alias.asname or alias.name, alias.name) for alias in node.names
                         if alias.name.split(".")[0] == "gevent")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "gevent":
            bound.update((alias.asname or alias.name, f"{node.module}.{alias.name}") for alias in node.names)
    return bound


def _defined_by(cls):
    """What a class of ours defines itself: its methods and class attributes, and self.X it assigns."""
    names = set()
    for node in walked(cls):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    names.add(target.id)
                elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == "self":
                    names.add(target.attr)
    return names


def _reaches_instance(node, names):
    """``self.X``/``super().X`` (names: {"self"}), or ``server.X``/``self.server.X`` (names: {"server"})."""
    value = node.value
    if isinstance(value, ast.Name):
        return value.id in names
    if isinstance(value, ast.Attribute):
        return value.attr in names
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"
            and "self" in names)


def touched():
    found = set()
    for tree in _modules().values():
        bound = _gevent_names(tree)
        found |= {(bound[name].rsplit(".", 1)[0], name) for name in bound if "." in bound[name]}
        for node in walked(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
                found.add((bound[node.value.id], node.attr))
        for cls in [node for node in walked(tree) if isinstance(node, ast.ClassDef)]:
            bases = [bound[base.id] for base in cls.bases if isinstance(base, ast.Name) and base.id in bound]
            for base in bases:
                ours = _defined_by(cls)
                gevent_class = _resolve(base)
                for node in walked(cls):
                    if isinstance(node, ast.Attribute) and _reaches_instance(node, {"self"}) \
                            and (node.attr not in ours or _is_super_call(node)):
                        found.add((base, node.attr))
                found |= {(base, name) for name in ours if hasattr(gevent_class, name) and name != "__init__"}
                found |= {(base, name) for name in _reached_from_outside(ours, cls.name)}
    return found


def _is_super_call(node):
    return isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) and node.value.func.id == "super"


def _reached_from_outside(ours, class_name):
    """What the connection (and anything else in http/) reaches on the server it is given, or on its class."""
    reached = set()
    for tree in _modules().values():
        for node in walked(tree):
            if isinstance(node, ast.Attribute) and node.attr not in ours and (
                    _reaches_instance(node, {"server"})
                    or isinstance(node.value, ast.Name) and node.value.id == class_name):
                reached.add(node.attr)
    return reached


def _resolve(dotted):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_every_name_of_gevents_the_http_layer_touches_is_listed():
    assert touched() == TOUCHED


@pytest.mark.parametrize("owner, name", sorted(TOUCHED))
def test_each_name_touched_is_public_and_exists_in_the_gevent_installed(owner, name):
    assert not name.startswith("_") or (name.startswith("__") and name.endswith("__"))
    try:
        holder = importlib.import_module(owner)
    except ModuleNotFoundError:
        holder = _resolve(owner)
    if inspect.isclass(holder) and not hasattr(holder, name):  # set on each instance by the constructor
        holder = holder(("127.0.0.1", 0), lambda environ, start_response: [])
    assert hasattr(holder, name)


def test_nothing_in_the_http_layer_is_name_mangled_or_swaps_a_class():
    for module, tree in _modules().items():
        for node in walked(tree):
            if isinstance(node, ast.Attribute):
                assert not (node.attr.startswith("_") and "__" in node.attr.strip("_")), (module, node.attr)
            if isinstance(node, ast.FunctionDef):
                assert "__" not in node.name.strip("_"), (module, node.name)
            if isinstance(node, ast.Assign):
                assert not any(isinstance(t, ast.Attribute) and t.attr == "__class__" for t in node.targets), module


def test_the_server_builds_one_connection_per_socket_through_handler_class():
    # pywsgi's documented contract for handler_class: called with (socket, address, server), then handle().
    assert "handler_class(sock, address, self)" in inspect.getsource(pywsgi.WSGIServer.handle)
    assert list(inspect.signature(GrowthServer.handler_class).parameters) == ["sock", "address", "server"]


def test_no_module_outside_http_imports_pywsgi():
    """The list above is the whole of what the package takes from pywsgi only if http/ alone imports it."""
    def imports_pywsgi(path):
        return any(name.startswith("gevent.pywsgi") for name in _gevent_names(parsed(path)).values())
    outside = [path for path in (ROOT / "growth_gevent").rglob("*.py") if not path.is_relative_to(HTTP)]
    assert sorted(str(path.relative_to(ROOT)) for path in outside if imports_pywsgi(path)) == []
