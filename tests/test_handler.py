"""The pywsgi adapter served in process (gevent sockets, no process started): what a log line of a
request carries."""

import logging

import falcon
import gevent.socket

from growth_gevent.config import Config
from growth_gevent.core.logs import LogfmtFormatter, RequestIdFilter
from growth_gevent.http.server import listen, make_server
from growth_gevent.testing import read_response

ROUTER_ID = "7f1c4e0a-9b2d-4c1e-8f3a-2d6b5e9c0a11"


class Lines(logging.Handler):
    """The log lines of the ``growth_gevent`` loggers, formatted and filtered as configure_logging does."""

    def __init__(self):
        super().__init__()
        self.setFormatter(LogfmtFormatter())
        self.addFilter(RequestIdFilter())
        self.lines = []

    def emit(self, record):
        self.lines.append(self.format(record))


class Fails:
    def on_get(self, req, resp):
        raise RuntimeError("a bug")


def test_an_error_logged_while_serving_a_request_carries_its_request_id():
    app = falcon.App()
    app.add_route("/fails", Fails())
    config = Config(host="127.0.0.1", port=0)
    server = make_server(app, config, listen(config))
    server.start()
    lines = Lines()
    logger = logging.getLogger("growth_gevent")
    logger.addHandler(lines)
    try:
        answers = []
        for offered in (ROUTER_ID, None):
            sock = gevent.socket.create_connection(server.address[:2])
            sock.sendall(b"GET /fails HTTP/1.1\r\nHost: t\r\n"
                         + (b"X-Request-ID: %s\r\n" % offered.encode() if offered else b"") + b"\r\n")
            answers.append(read_response(sock))
            sock.close()
    finally:
        logger.removeHandler(lines)
        server.stop()
    assert [(status, headers["x-request-id"] == ROUTER_ID) for status, headers, _ in answers] == [
        (500, True), (500, False)]
    errors = [line for line in lines.lines if "level=error" in line and "RuntimeError: a bug" in line]
    assert [line.split(" ")[3] for line in errors] == [
        f"request_id={headers['x-request-id']}" for _, headers, _ in answers]
