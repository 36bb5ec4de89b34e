"""A real ``python -m growth_gevent`` process on a free loopback port, and raw-socket helpers."""

import http.client
import json
import os
import pathlib
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from growth_gevent.testing.polling import wait_for

# The directory holding the growth_gevent package (in a checkout, the repository): the server processes run
# there, so that ``-m growth_gevent`` imports this very package and relative paths (scripts/) resolve.
ROOT = pathlib.Path(__file__).resolve().parents[2]
START_SECONDS = 15
LISTENING = re.compile(r"listening on http://([\d.]+):(\d+)")


def start_fails(**env: str) -> subprocess.CompletedProcess[str]:
    """Run a server process that is expected to refuse to start; its CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "growth_gevent"], check=False, cwd=ROOT,
                          env={**os.environ, "HOST": "127.0.0.1", "PORT": "0", **env},
                          capture_output=True, text=True, timeout=60)


class LiveServer:
    def __init__(self, command: Sequence[str] = (sys.executable, "-m", "growth_gevent"), **env: str) -> None:
        self.command = list(command)
        self.env = {**os.environ, "HOST": "127.0.0.1", "PORT": "0", **env}
        self.process: subprocess.Popen[str] | None = None
        self.port: int | None = None
        self.lines: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()  # None: the process closed its stderr
        self.process_options: dict[str, Any] = {}  # more keyword arguments of Popen, of its many types

    def launch(self) -> "LiveServer":
        """Start the process without waiting for it to listen."""
        self.process = subprocess.Popen(self.command, cwd=ROOT, env=self.env, stderr=subprocess.PIPE, text=True,
                                        **self.process_options)
        threading.Thread(target=self._read_stderr, daemon=True).start()
        return self

    def start(self) -> "LiveServer":
        self.launch()
        match = self.wait_for_line(LISTENING, START_SECONDS)
        self.port = int(match.group(2))
        return self

    def _read_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None  # launched, stderr=PIPE
        for line in self.process.stderr:
            self._lines.put(line)
        self._lines.put(None)

    def wait_for_line(self, pattern: str | re.Pattern[str], timeout: float) -> re.Match[str]:
        pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern.pattern!r}; got {self.lines}") from None
            if line is None:
                raise AssertionError(f"server exited before {pattern.pattern!r}; got {self.lines}")
            self.lines.append(line)
            match = pattern.search(line)
            if match:
                return match

    def read_available_lines(self) -> None:
        """Take the lines the server has written so far into ``lines``, without waiting."""
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                return
            if line is None:
                self._lines.put(None)  # still there for wait_exit()
                return
            self.lines.append(line)

    def connection(self, timeout: float = 10) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def socket(self, timeout: float = 10) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)

    def request(self, method: str, path: str, body: bytes | str | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        connection = self.connection()
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def request_json(self, method: str, path: str, document: object = None) -> tuple[int, Any]:
        body = None if document is None else json.dumps(document).encode()
        status, data = self.request(method, path, body, {"Content-Type": "application/json"})
        return status, json.loads(data) if data else None

    def wait_until_complete(self, timeout: float = 30) -> dict[str, Any]:
        def complete() -> dict[str, Any] | None:
            status = self.request_json("GET", "/api/v1/growth/post/status")[1]
            return status if status["msg"] == "complete" else None

        return wait_for(complete, timeout)

    def terminate(self) -> None:
        assert self.process is not None, "launch() first"
        self.process.send_signal(signal.SIGTERM)

    def wait_exit(self, timeout: float) -> int:
        assert self.process is not None, "launch() first"
        code = self.process.wait(timeout)
        for line in iter(self._lines.get, None):
            self.lines.append(line)
        return code

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP response read from a raw socket: (status, headers, body)."""
    response = http.client.HTTPResponse(sock)
    response.begin()
    body = response.read()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def closed_by_peer(sock: socket.socket) -> bool:
    """True when the server has closed the connection (reads EOF or a reset)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
