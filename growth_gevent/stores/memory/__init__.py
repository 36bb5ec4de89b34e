"""The in-memory store: one process's records in nested dicts (:mod:`.store`), the reads over them
(:mod:`.reads`), the facets kept as writes happen (:mod:`.facet_tally`), the background bulk
:mod:`.applier`, and the interface to the log that keeps its writes past the process (:mod:`.write_log`)."""

from .store import MemoryStore

__all__ = ["MemoryStore"]
