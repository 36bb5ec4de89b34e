"""What the packaging tests share: the local package index and the Redis extra."""

LOCAL_INDEX = "file:///opt/pypi/simple"  # this machine's copy of PyPI: the build backend comes from it
REDIS_CLIENT = {"redis", "hiredis"}


REDIS_EXTRA_HINT = "pip install 'growth-gevent[redis]'"
