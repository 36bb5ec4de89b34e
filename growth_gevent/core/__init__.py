"""The ground floor, which every layer may use: what a valid record is (``records``), logfmt and the log
throttle (``logs``), and the one way long work yields to the event loop (``loop``).

Imports nothing of growth_gevent's.
"""
