"""Memory given back to the system once a bulk load is done with it: glibc's ``malloc_trim``.

A bulk load's body, its text and the parser's lists are large blocks of C's ``malloc``, freed when the load has
been applied; glibc keeps freed heap memory for the next allocation rather than returning it, so every load left
the process larger (docs/performance.md#memory-a-load-leaves-behind). ``malloc_trim(0)`` returns the free pages
of every arena to the system. Python's own small objects live in its arenas, which it frees itself when empty.
"""

import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    import ctypes  # here, at the first load: its import is ~0.6 MiB that an idle server need not hold

    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # no glibc (musl, macOS): nothing to call
        return None


def give_back_memory() -> None:
    """Return the free pages of C's heap to the system (a few ms at most, after a load, never per request)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
