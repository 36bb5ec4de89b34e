"""What makes the in-memory store's acknowledgements survive a crash: the journal written (``journal``)
and read back (``replay``), the snapshot file and its policy (``snapshot``), and the ``JournalLog``, the
journal as the ``MemoryStore``'s write log (``journaled``; the interface is ``stores.memory.write_log``).

May import: ``stores``, ``core``.
"""
