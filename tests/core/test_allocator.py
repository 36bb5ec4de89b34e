"""What a load leaves behind: the names a store keeps are its own, and CPython's method cache lets go of its
names once loads are applied (core/allocator.py says why both matter)."""

import sys

from growth_gevent.core.allocator import give_back_memory, kept_name


def made_at_run_time(text: str) -> str:
    """``text`` as a parse makes a name: a new string, not the constant it is equal to."""
    return "".join(list(text))


def test_kept_name_is_a_copy_made_now_and_then_the_one_kept():
    name = made_at_run_time("NGDP_RPCH")
    kept = kept_name(name)
    assert kept == name and kept is not name
    assert kept_name(made_at_run_time("NGDP_RPCH")) is kept


def test_give_back_memory_lets_go_of_a_name_the_method_cache_holds():
    class Watcher:
        pass

    name = made_at_run_time("stop_watching")  # looked up by a string made for the call, as gevent's C code does
    before = sys.getrefcount(name)
    getattr(Watcher(), name, None)
    held = sys.getrefcount(name) - before  # 1: CPython 3.11's cache keeps the name of a lookup it caches
    give_back_memory()
    assert sys.getrefcount(name) - before == held - 1
