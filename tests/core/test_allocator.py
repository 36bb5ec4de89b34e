"""What a load leaves behind: the names a store keeps are its own, and CPython's method cache lets go of its
names once loads are applied (core/allocator.py says why both matter)."""

import gc
import sys
import weakref

from growth_gevent.core.allocator import freeze_start_up, give_back_memory, kept_name


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


def test_give_back_memory_collects_the_cycles_made_while_loads_ran():
    class Connection:
        pass

    gc.disable()  # no collection but the one under test
    try:
        connection = Connection()
        connection.self = connection  # as a closed connection's objects refer to each other
        gone = weakref.ref(connection)
        del connection
        give_back_memory()
        assert gone() is None
    finally:
        gc.enable()


def test_freeze_start_up_keeps_what_start_up_made_out_of_later_collections():
    try:
        freeze_start_up()
        assert gc.get_freeze_count() > 0 and not gc.garbage
    finally:
        gc.unfreeze()
