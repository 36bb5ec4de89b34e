"""The stack's ceiling: a bare WSGI app answering a fixed body, on the very same server as ours; with
``falcon``, the same body from a bare falcon app (one route, one responder, no middleware): falcon's own
floor, what no app of ours on falcon can beat; with ``stream``, no HTTP server at all: a bare gevent
``StreamServer`` that answers every ``recv`` with the same fixed response, the floor of any server on gevent
(what a request costs in greenlet switches, the event loop and the system calls alone).

    python scripts/ceiling.py [falcon|stream]   # reads HOST and PORT like the service
    granian --interface wsgi --factory scripts.ceiling:falcon_floor_app   # the falcon floor on another host
"""

import os
import sys

BODY = b'{"Country":"BRZ","Indicator":"NGDP_R","Value":183.26,"Year":2002}'
HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]
# The stream floor's answer to every read: what the ceiling sends but its Date, X-Request-ID and Keep-Alive.
RESPONSE = b"HTTP/1.1 200 OK\r\n%s\r\n%s" % (b"".join(b"%s: %s\r\n" % (n.encode(), v.encode()) for n, v in HEADERS),
                                              BODY)


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


def answer_every_read(sock, address):
    """The stream floor: one fixed response a ``recv``, which is one request a read for a client that waits for
    each answer (wrk, without pipelining), until the client closes."""
    while sock.recv(65536):
        sock.sendall(RESPONSE)


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
    if sys.argv[1:] == ["stream"]:
        from gevent.server import StreamServer

        server = StreamServer(listen(config), answer_every_read)
        server.start()
        logging.info("listening on http://%s:%d", *server.address[:2])
        server.serve_forever()
        return 0
    app = falcon_floor_app() if sys.argv[1:] == ["falcon"] else fixed_body_app
    return serve(make_server(app, config, listen(config)), open_store(config), config)


if __name__ == "__main__":
    sys.exit(main())
