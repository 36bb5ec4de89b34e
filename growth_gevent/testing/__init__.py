"""What the tests and the bench need to run the service for real, as ``falcon.testing`` is for falcon: a
``python -m growth_gevent`` process on a free loopback port (``LiveServer``, ``start_fails``), raw-socket
helpers, a throwaway redis-server (``RedisServer``) and a store on it (``open_redis_store``), and polling
with a deadline (``wait_for``, ``holds_for``, ``settled``).

Nothing here imports pytest, and ``import growth_gevent`` does not import this package.
"""

from growth_gevent.testing.live import (
    LISTENING,
    START_SECONDS,
    LiveServer,
    closed_by_peer,
    read_response,
    start_fails,
)
from growth_gevent.testing.polling import holds_for, settled, wait_for
from growth_gevent.testing.redis_server import RedisServer, free_port, open_redis_store

__all__ = ["LISTENING", "START_SECONDS", "LiveServer", "RedisServer", "closed_by_peer", "free_port", "holds_for",
           "open_redis_store", "read_response", "settled", "start_fails", "wait_for"]
