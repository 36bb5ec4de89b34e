"""The ground floor, which every layer may use: what a valid record is (``records``), logfmt and the log
throttle (``logs``), the one way long work yields to the event loop (``loop``), and the package's ``version``.

Imports nothing of growth_gevent's.
"""
