"""The store contract and the in-memory store.

Keys are ``(COUNTRY, INDICATOR, year)`` tuples from :func:`growth_gevent.records.make_key`; values are
finite JSON numbers. The store knows nothing of HTTP.
"""

import abc

from gevent.lock import RLock

from .bulk import DEFAULT_CHUNK_SIZE, BulkLoader


class Store(abc.ABC):
    """What the resources need of a store, whatever holds the data."""

    @abc.abstractmethod
    def get(self, key):
        """The value stored under ``key``, or None."""

    @abc.abstractmethod
    def put(self, key, value):
        """Store ``value``; return True when the key is new, False when a value was replaced."""

    @abc.abstractmethod
    def delete(self, key):
        """Remove ``key``; return False when it was absent."""

    @abc.abstractmethod
    def size(self):
        """How many records are stored."""

    @abc.abstractmethod
    def submit_bulk(self, records):
        """Accept validated ``(key, value)`` pairs to be applied in the background; return the job number."""

    @abc.abstractmethod
    def bulk_status(self):
        """A :class:`growth_gevent.bulk.BulkStatus`."""

    @abc.abstractmethod
    def wait_idle(self, timeout=None):
        """Block until every accepted bulk job is applied; False if ``timeout`` passed first."""

    def close(self):
        """Release what the store holds (connections, greenlets)."""


class MemoryStore(Store):
    """A dict guarded by a gevent lock.

    Single-key reads take no lock: a dict lookup cannot be interrupted by a greenlet switch. Writes
    take it so that anything reading the whole dict while yielding sees no change.
    ``changes`` counts writes, so that a snapshot can tell whether there is anything new to save.
    """

    def __init__(self, chunk_size=DEFAULT_CHUNK_SIZE):
        self._data = {}
        self._lock = RLock()
        self._bulk = BulkLoader(self._apply_chunk, chunk_size)
        self.changes = 0

    def get(self, key):
        return self._data.get(key)

    def put(self, key, value):
        with self._lock:
            created = key not in self._data
            self._data[key] = value
            self.changes += 1
        return created

    def delete(self, key):
        with self._lock:
            if self._data.pop(key, None) is None:
                return False
            self.changes += 1
            return True

    def size(self):
        return len(self._data)

    def items(self):
        """A copy of every ``(key, value)``, taken in one step."""
        with self._lock:
            return list(self._data.items())

    def submit_bulk(self, records):
        return self._bulk.submit(records)

    def bulk_status(self):
        return self._bulk.status()

    def wait_idle(self, timeout=None):
        return self._bulk.wait_idle(timeout)

    def close(self):
        self._bulk.close()

    def _apply_chunk(self, chunk):
        with self._lock:
            self._data.update(chunk)
            self.changes += 1
