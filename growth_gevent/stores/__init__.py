"""The stores behind one contract (``base``): in memory for one process (``memory/``, with its background
bulk applier and the interface to its write log), Redis for several (``redis/``). They know nothing of HTTP.

May import: ``core``.
"""
