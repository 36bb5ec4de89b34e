"""The composition root: stores chosen by name from one registry, and no other module telling stores apart."""

import ast
import re

import pytest

from growth_gevent import service
from growth_gevent.config import Config
from growth_gevent.durability.journaled import JournalLog
from growth_gevent.stores.memory import MemoryStore
from growth_gevent.stores.memory.write_log import NoLog
from tests.helpers.source import parsed, walked
from tests.helpers.support import ROOT

PACKAGE = ROOT / "growth_gevent"
CONCRETE_STORES = {"MemoryStore", "RedisStore", "JournalLog"}
# Where a concrete store or log may be named: the composition root, each one's own code, the snapshotter's
# docstring, and the test harness that starts a Redis store for the tests.
NAMING_STORES = {"service.py", "stores", "durability/journaled.py", "testing"}


def _may_name_stores(path):
    relative = path.relative_to(PACKAGE).as_posix()
    return any(relative == allowed or relative.startswith(allowed + "/") for allowed in NAMING_STORES)


def _sniffing(tree):
    """What in ``tree`` tells stores apart: a concrete store named, a type or module read off an object."""
    for node in walked(tree):
        if isinstance(node, ast.Name) and node.id in CONCRETE_STORES:
            yield f"names {node.id} (line {node.lineno})"
        elif isinstance(node, ast.alias) and node.name in CONCRETE_STORES:
            yield f"imports {node.name}"
        elif isinstance(node, ast.Attribute) and node.attr == "__module__":
            yield f"reads __module__ (line {node.lineno})"
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" and any(
                isinstance(arg, ast.Constant) and arg.value == "journal" for arg in node.args):
            yield f"looks for a journal (line {node.lineno})"


@pytest.mark.parametrize("path", sorted(p for p in PACKAGE.rglob("*.py") if not _may_name_stores(p)),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_composition_root_tells_stores_apart(path):
    assert list(_sniffing(parsed(path))) == []


def test_the_check_sees_sniffing():
    source = "isinstance(store, MemoryStore)\ntype(store).__module__\ngetattr(store, 'journal', None)\n"
    assert len(list(_sniffing(ast.parse(source)))) == 3


@pytest.mark.parametrize(("url", "opener"), [
    ("redis://h:1/0", service.open_redis_store), ("rediss://h:1/0", service.open_redis_store),
    ("unix:///tmp/r.sock", service.open_redis_store), ("REDIS://h:1/0", service.open_redis_store),
    ("redis+sentinel://h:1/s", service.open_sentinel_store), ("rediss+sentinel://h:1/s", service.open_sentinel_store),
    ("REDIS+SENTINEL://h:1/s", service.open_sentinel_store)])
def test_every_redis_url_the_settings_take_names_a_registered_store(url, opener):
    config = Config.from_env({"GROWTH_STORE": url})
    assert service.STORES[service.store_name(config)] is opener


def test_a_url_of_no_registered_scheme_is_refused_at_start_naming_the_schemes_there_are():
    # The settings take any URL: which schemes name a store is STORES's to say, and no one else's.
    config = Config.from_env({"GROWTH_STORE": "postgres://h/db"})
    with pytest.raises(service.StartError, match=r"^GROWTH_STORE must be memory, redis or a URL of scheme redis, "
                       r"rediss, unix, redis\+sentinel or rediss\+sentinel, got 'postgres://h/db'$"):
        service.build(config)


def test_no_module_but_the_composition_root_lists_the_store_url_schemes():
    listed = [path.name for path in (ROOT / "growth_gevent").rglob("*.py")
              if path.name != "service.py" and re.search(r"[\"']rediss://", path.read_text())]
    assert listed == []


def test_the_default_is_the_memory_store_and_a_snapshot_journals_it(tmp_path):
    assert service.store_name(Config()) == "memory"
    plain = service.open_store(Config())
    path = str(tmp_path / "growth.snapshot")
    journaled = service.open_store(Config(snapshot_path=path), JournalLog(path, "always"))
    try:
        assert type(plain) is type(journaled) is MemoryStore and plain.name == "memory"
        assert type(plain.write_log) is NoLog and type(journaled.write_log) is JournalLog
    finally:
        plain.close()
        journaled.close()
