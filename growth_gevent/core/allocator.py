"""Memory given back once a bulk load is done with it, and what a store keeps made where it does not pin a load's.

A bulk load's body, its text and the parser's lists are large blocks of C's ``malloc``, freed when the load has
been applied; glibc keeps freed heap memory for the next allocation rather than returning it, so every load left
the process larger (docs/performance.md#memory-a-load-leaves-behind). ``malloc_trim(0)`` returns the free pages
of every arena to the system.

Python's own small objects live in 1 MiB arenas of 16 KiB pools, and an arena goes back to the system only once
every object in it is freed. A load's parse fills some twenty arenas with objects that live until it is applied;
one object that outlives them keeps its arena, 1 MiB of RSS. So what a store keeps from a load is made by the
store when it applies it (its own copy of a new name, :func:`kept_name`; its own copy of each value), never by
the parse, and what CPython itself keeps from that time is let go (:func:`give_back_memory`).
"""

import functools
import gc
import sys
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    import ctypes  # here, at the first load: its import is ~0.6 MiB that an idle server need not hold

    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # no glibc (musl, macOS): nothing to call
        return None


def give_back_memory() -> None:
    """Collect the cycles made while loads ran, and return the free pages of C's heap to the system (a few ms,
    after loads, never per request).

    A connection's objects refer to each other: one closed while a load ran (a status poll's) is freed by the
    collector's oldest generation only, which runs rarely, and meanwhile keeps its arenas. What start-up
    made is out of the collector's sight (:func:`freeze_start_up`), so a full collection costs what was
    made since.

    First, CPython's method cache lets go of the names it holds. gevent's C code looks a fired timer's
    ``stop`` up by a name string it makes for the call (each ``let_io_run`` of a load fires one), and CPython
    3.11's cache keeps a reference to each such name until its slot is reused: a few dozen strings a load,
    each keeping an arena of the load's (issue 46). Emptying the cache frees them; it is refilled at the next
    lookups, and the types' version tags, which specialised code checks, stay as they are.
    """
    gc.collect()
    clear_method_cache = getattr(sys, "_clear_type_cache", None)  # CPython's
    if clear_method_cache is not None:
        clear_method_cache()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def freeze_start_up() -> None:
    """Collect start-up's garbage, then keep what start-up made (modules, the app) out of every later
    collection: objects that live as long as the process, which a full collection would otherwise go over."""
    gc.collect()
    gc.freeze()


def kept_name(name: str) -> str:
    """The one copy of ``name`` that the process keeps: the one it keeps already, else a copy made now.

    A name a store keeps from a load must not be the parse's string, made among the objects the load frees.
    Interned, each name is kept once however many series and facets hold it, and no longer than they do.
    """
    return sys.intern(name.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass"))
