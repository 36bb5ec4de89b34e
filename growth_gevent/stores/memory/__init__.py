"""The in-memory store: one process's records in nested dicts (:mod:`.store`), the reads over them
(:mod:`.reads`), the facets kept as writes happen (:mod:`.facet_tally`), the background bulk
:mod:`.applier`, and its one durability partner (:mod:`.write_log`): the journal that keeps its writes past
the process, or ``NoLog``, which keeps nothing."""

from .store import MemoryStore

__all__ = ["MemoryStore"]
