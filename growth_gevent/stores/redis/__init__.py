"""The Redis store, in layers, each module using only those above it: the key layout (:mod:`.keys`),
the Lua scripts (:mod:`.scripts`, ``lua/``), a connection and its handshake (:mod:`.connection`), the
primary found through Sentinel (:mod:`.sentinel`), the connection every request greenlet shares
(:mod:`.shared_connection`), the read cache (:mod:`.cache`), what Redis persists and whether it lost its
data (:mod:`.persistence`), the reads (:mod:`.reads`), and the store (:mod:`.store`)."""

from .store import RedisStore

__all__ = ["RedisStore"]
