"""The stack's ceiling: a bare WSGI app answering a fixed body, on the very same server as ours.

    python scripts/ceiling.py   # reads HOST and PORT like the service
"""

from gevent import monkey

monkey.patch_all()

import os  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from growth_gevent.cli import open_store  # noqa: E402
from growth_gevent.config import Config  # noqa: E402
from growth_gevent.http.server import listen, make_server  # noqa: E402
from growth_gevent.ops.lifecycle import serve  # noqa: E402

BODY = b'{"Country":"BRZ","Indicator":"NGDP_R","Value":183.26,"Year":2002}'
HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]


def fixed_body_app(environ, start_response):
    start_response("200 OK", HEADERS)
    return [BODY]


if __name__ == "__main__":
    import logging
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = Config.from_env(os.environ)
    sys.exit(serve(make_server(fixed_body_app, config, listen(config)), open_store(config), config))
