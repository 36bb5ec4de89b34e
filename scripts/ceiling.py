"""The stack's ceiling: a bare WSGI app answering a fixed body, on the very same server as ours; with
``falcon``, the same body from a bare falcon app (one route, one responder, no middleware): falcon's own
floor, what no app of ours on falcon can beat.

    python scripts/ceiling.py [falcon]   # reads HOST and PORT like the service
"""

import os
import sys

BODY = b'{"Country":"BRZ","Indicator":"NGDP_R","Value":183.26,"Year":2002}'
HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]


def fixed_body_app(environ, start_response):
    start_response("200 OK", HEADERS)
    return [BODY]


class FixedRecord:
    def on_get(self, req, resp, country, indicator, year):
        resp.data = BODY


def falcon_floor_app():
    import falcon  # here: main() patches the standard library before falcon imports its parts, as the service

    app = falcon.App()
    app.add_route("/api/v1/growth/{country}/{indicator}/{year:int}", FixedRecord())
    return app


def main():
    from gevent import monkey
    monkey.patch_all()

    import logging

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from growth_gevent.config import Config
    from growth_gevent.http.server import listen, make_server
    from growth_gevent.ops.lifecycle import serve
    from growth_gevent.service import open_store

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = Config.from_env(os.environ)
    app = falcon_floor_app() if sys.argv[1:] == ["falcon"] else fixed_body_app
    return serve(make_server(app, config, listen(config)), open_store(config), config)


if __name__ == "__main__":
    sys.exit(main())
