"""The gevent pywsgi server: JSON protocol errors, keep-alive aware graceful shutdown."""

import logging
import signal
import socket
import time

import gevent
import ujson
from gevent.event import Event
from gevent.baseserver import parse_address
from gevent.pool import Pool
from gevent.pywsgi import WSGIHandler, WSGIServer

# Above the default of 128 so that 1000 clients connecting at once are queued, not dropped.
LISTEN_BACKLOG = 2048

log = logging.getLogger("growth_gevent")
access_log = logging.getLogger("growth_gevent.access")


def _raw_json_response(status, message):
    body = ujson.dumps({"msg": message}).encode()
    return (b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (status.encode(), len(body), body))


# pywsgi answers requests it cannot parse itself, with an empty text/plain body; ours are JSON.
_PROTOCOL_ERRORS = {
    "400": _raw_json_response("400 Bad Request", "malformed HTTP request"),
    "414": _raw_json_response("414 Request-URI Too Long", "request line too long"),
}
_APPLICATION_ERRORS = {
    400: ("400 Bad Request", "malformed request body"),
    500: ("500 Internal Server Error", "internal server error"),
}


def _status_code(status):
    # bytes after an application's response, the bare code as str after a protocol error.
    if isinstance(status, bytes):
        status = status.decode("latin-1")
    return (status or "000").split(" ", 1)[0]


class GrowthHandler(WSGIHandler):
    """pywsgi's handler, plus what graceful shutdown needs to know: is this connection idle?"""

    idle = False

    def handle(self):
        # Without it a response sent in two writes (a chunked one) would wait for the client's
        # delayed ACK of the first: ~40 ms per keep-alive request.
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connections = self.server.connections
        connections.add(self)
        try:
            super().handle()
        finally:
            connections.discard(self)

    def read_requestline(self):
        # Between requests a keep-alive connection waits here; shutdown may close it.
        self.idle = True
        try:
            return super().read_requestline()
        finally:
            self.idle = False

    def handle_one_request(self):
        result = super().handle_one_request()
        if result is True:
            # A fast client's next request is already waiting when this one is answered, so the read
            # would not block and this greenlet would never yield: other connections would starve for
            # whole seconds. Yield once per request so that every connection takes its turn.
            gevent.sleep(0)
        elif type(result) is tuple:
            status = result[0]
            return status, _PROTOCOL_ERRORS.get(status, result[1])
        return result

    def start_response(self, status, headers, exc_info=None):
        if self.server.draining and not any(name.lower() == "connection" for name, _ in headers):
            headers = [*headers, ("Connection", "close")]
        write = super().start_response(status, headers, exc_info)
        if self.close_connection:
            # pywsgi's own flag for "the socket will be closed, do not drain the request body":
            # without it an oversize upload would be read to its end before the connection closes.
            self.wsgi_input._chunked_input_error = True
        return write

    def _write_with_headers(self, data):
        # pywsgi sends the head and the body in two writes; one write saves a syscall per response.
        self.headers_sent = True
        self.finalize_headers()
        head = b"".join([b"HTTP/1.1 ", self.status, b"\r\n",
                         *[b"%s: %s\r\n" % header for header in self.response_headers], b"\r\n"])
        if self.response_use_chunked:
            self._sendall(head)
            self._write(data)
        else:
            self._sendall(head + data)

    def log_request(self):
        # One logfmt line per request; and none formatted at all when the access log is off.
        if self.server.access_log:
            duration = (self.time_finish - self.time_start) * 1000 if self.time_finish else None
            access_log.info("", extra={"fields": {
                "method": self.command or "-", "path": self.path or "-",
                "status": _status_code(self.status),
                "duration_ms": "-" if duration is None else f"{duration:.3f}",
                "bytes": self.response_length, "remote": self.client_address[0]}})

    def _send_error_response_if_possible(self, error_code):
        if self.response_length:
            self.close_connection = True
            return
        status, message = _APPLICATION_ERRORS[error_code]
        body = ujson.dumps({"msg": message}).encode()
        try:
            self.start_response(status, [("Content-Type", "application/json"), ("Connection", "close"),
                                         ("Content-Length", str(len(body)))])
            self.write(body)
        except OSError:
            self.close_connection = True

    def close_if_idle(self):
        if self.idle:
            try:
                self.socket.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class GrowthServer(WSGIServer):
    handler_class = GrowthHandler

    def __init__(self, listener, application, access_log=False, **kwargs):
        super().__init__(listener, application, spawn=Pool(), log=None, **kwargs)
        self.access_log = access_log
        self.connections = set()
        self.draining = False

    def drain(self, timeout):
        """Stop accepting, close idle keep-alive connections, let requests in flight finish.

        Returns False when requests were still running after ``timeout`` seconds (they are killed).
        """
        self.draining = True
        self.close()
        log.info("shutting down: stopped accepting, finishing %d connections", len(self.connections))
        for handler in list(self.connections):
            handler.close_if_idle()
        finished = self.pool.join(timeout=timeout)
        self.pool.kill(block=True, timeout=1)
        return finished


def listen(config):
    """The listening socket, bound once: every worker process accepts on the same one."""
    family, address = parse_address((config.host, config.port))
    return GrowthServer.get_listener(address, LISTEN_BACKLOG, family)


def make_server(app, config, listener):
    return GrowthServer(
        listener, app,
        access_log=config.access_log,
        error_log=logging.getLogger("growth_gevent.http"),
        # A fixed SERVER_NAME spares pywsgi a reverse-DNS lookup of the listening address.
        environ={"SERVER_NAME": config.host},
    )


def stop_on_signals():
    """An Event set by SIGTERM or SIGINT."""
    stop = Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        gevent.signal_handler(signum, stop.set)
    return stop


def serve(server, store, config, snapshotter=None, stop=None):
    """Serve until ``stop`` is set (by default: SIGTERM or SIGINT), then shut down gracefully; return
    the exit code.

    With a snapshotter, the last snapshot is written after requests in flight and accepted bulk
    loads are done; if it cannot be written the exit code is 1.
    """
    if stop is None:
        stop = stop_on_signals()
    server.start()
    host, port = server.address[:2]
    log.info("listening on http://%s:%d", host, port)
    if snapshotter is not None:
        snapshotter.start()
    stop.wait()

    deadline = time.monotonic() + config.shutdown_timeout
    if not server.drain(config.shutdown_timeout):
        log.warning("requests still running after %ss were stopped", config.shutdown_timeout)
    if not store.wait_idle(max(0.0, deadline - time.monotonic())):
        log.warning("accepted bulk loads not all applied at shutdown")
    exit_code = 0
    if snapshotter is not None:
        try:
            snapshotter.stop()
        except OSError as error:
            log.error("last snapshot failed: %s", error)
            exit_code = 1
    store.close()
    log.info("stopped")
    return exit_code
