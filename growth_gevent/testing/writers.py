"""Threads that PUT to a live server without pause, each to keys of its own, recording what was
acknowledged: what a failover test checks afterwards, and what the bench times."""

import http.client
import json
import threading
import time
from collections.abc import Callable

# Years each writer cycles through: its keys are written again and again, so a lost write shows as an
# older value, not only as a missing key.
KEYS_PER_WRITER = 50


class Writers:
    """``count`` threads; writer ``i`` PUTs ``W{i}/X/{n % KEYS_PER_WRITER}`` = ``n`` for n = 0, 1, 2...
    ``acknowledged[path]`` is the last value answered 2xx, ``unacknowledged[path]`` every value sent and
    not answered 2xx (refused, or its answer lost: it may have been applied); ``successes`` the times of
    the 2xx answers, ``latencies`` their durations."""

    def __init__(self, port: int, count: int = 8, timeout: float = 5.0):
        self._port = port
        self._timeout = timeout
        self.acknowledged: dict[str, int] = {}
        self.unacknowledged: dict[str, set[int]] = {}
        self.successes: list[float] = []
        self.latencies: list[float] = []
        self.failures = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._write, args=(index,), daemon=True) for index in range(count)]

    def start(self) -> "Writers":
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def first_success_after(self, moment: float) -> float | None:
        return next((success for success in self.successes if success > moment), None)

    def lost(self, read: Callable[[str], object]) -> dict[str, tuple[int, object]]:
        """The acknowledged writes missing now: path -> (last value acknowledged, ``read(path)``), for each
        path whose value is neither that one nor a later one sent without acknowledgement."""
        missing: dict[str, tuple[int, object]] = {}
        for path, value in self.acknowledged.items():
            now = read(path)
            later = {sent for sent in self.unacknowledged.get(path, ()) if sent > value}
            if now != value and now not in later:
                missing[path] = (value, now)
        return missing

    def _write(self, index: int) -> None:
        connection = None
        n = 0
        while not self._stop.is_set():
            path = f"/api/v1/growth/W{index}/X/{n % KEYS_PER_WRITER}"
            started = time.monotonic()
            connection = connection or http.client.HTTPConnection("127.0.0.1", self._port, timeout=self._timeout)
            try:
                connection.request("PUT", path, json.dumps({"value": n}), {"Content-Type": "application/json"})
                response = connection.getresponse()
                response.read()
                ok = response.status < 300
            except (OSError, http.client.HTTPException):
                connection.close()
                connection, ok = None, False
            if ok:
                self.acknowledged[path] = n
                self.successes.append(time.monotonic())
                self.latencies.append(time.monotonic() - started)
            else:
                self.unacknowledged.setdefault(path, set()).add(n)
                self.failures += 1
            n += 1
