"""Raw HTTP for the real-socket tests (tests/http/test_http_live.py, tests/http/test_server_connections_live.py): a
request head of given lines, a record PUT through the live server's own client, and slow clients (Trickle)."""

import select
import threading

RECORD = "/api/v1/growth/BRZ/NGDP_R/2002"
JSON = b"Content-Type: application/json"
HOST = b"Host: t"


def put_record(server):
    status, _ = server.request("PUT", RECORD, b'{"value": 1.5}', {"Content-Type": "application/json"})
    assert status in (200, 201)


def post_head(*lines, version=b"HTTP/1.1"):
    return b"POST /api/v1/growth " + version + b"\r\n" + b"".join(line + b"\r\n" for line in lines) + b"\r\n"


def unanswered(sock):
    """True while the server has sent nothing on ``sock`` and not closed it (poll: no limit of 1024 descriptors)."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return not poller.poll(0)


class Trickle:
    """A thread that sends ``piece`` on each socket every ``seconds`` until stopped or the socket fails."""

    def __init__(self, sockets, piece, seconds):
        self.sockets = list(sockets)
        self._piece = piece
        self._seconds = seconds
        self._stop = threading.Event()
        self.failed = set()  # indexes of the sockets a send failed on (the server closed them)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()

    def _run(self):
        while not self._stop.wait(self._seconds):
            for index, sock in enumerate(self.sockets):
                if index not in self.failed:
                    try:
                        sock.sendall(self._piece)
                    except OSError:
                        self.failed.add(index)
