"""What makes the in-memory store's acknowledgements survive a crash: the journal's format on disk
(``journal_format``), written (``journal``) and read back (``replay``); the snapshot file and the
snapshotter (``snapshot``); the ``JournalLog``, the journal as the ``MemoryStore``'s one durability partner,
which also holds the write refusal, the snapshots' status and the change count (``journaled``; the
interface is ``stores.memory.write_log``); and ``growth-gevent check`` (``check``).

May import: ``stores``, ``core``.
"""
