"""What an operator watches and drives: Prometheus metrics (``metrics``), serve-then-stop on signals
(``lifecycle``) and the pre-fork supervisor of several workers (``workers``).

May import: ``durability``, ``stores``, ``core``.
"""
