"""What makes the in-memory store's acknowledgements survive a crash: the journal written (``journal``)
and read back (``replay``), the snapshot file and its policy (``snapshot``), and the ``JournaledStore``
that puts them in front of a ``MemoryStore`` (``journaled``).

May import: ``stores``, ``core``.
"""
