"""What the durability tests share: writers racing a kill -9, the check command as a process, the fsync
that a test holds back, segments in an older format."""

import errno
import http.client
import itertools
import json
import marshal
import os
import struct
import subprocess
import sys
import threading

import gevent

from growth_gevent.durability import journal as journal_module
from growth_gevent.durability import journal_format
from growth_gevent.durability.journal_format import frame
from growth_gevent.testing import start_fails, wait_for
from tests.helpers.support import ROOT

RECORD = "/api/v1/growth/A/B/{}"


def put(server, year, value):
    return server.request_json("PUT", RECORD.format(year), {"value": value})


WRITERS = 16


class Writers:
    """WRITERS threads writing their own keys as fast as they are answered (PUTs, and a DELETE every
    fifth write), each remembering, per key, the last write acknowledged and whether one was in flight
    after it (answered or not when the server died, so either outcome is right)."""

    def __init__(self, server, first_year):
        self._server = server
        self._first_year = first_year
        self.acknowledged = {}  # year -> value, or None for a DELETE
        self.uncertain = {}  # year -> the value of a write in flight when the server died
        self._threads = [threading.Thread(target=self._write, args=(writer,)) for writer in range(WRITERS)]
        for thread in self._threads:
            thread.start()

    def _write(self, writer):
        connection = self._server.connection(timeout=5)
        for step in itertools.count():
            year = self._first_year + writer * 1000 + step % 50
            value = None if step % 5 == 4 else step + writer / 100
            self.uncertain[year] = value
            try:
                if value is None:
                    connection.request("DELETE", RECORD.format(year))
                else:
                    connection.request("PUT", RECORD.format(year), json.dumps({"value": value}),
                                       {"Content-Type": "application/json"})
                response = connection.getresponse()
                response.read()
            except (OSError, http.client.HTTPException):
                return
            assert response.status in (200, 201, 204, 404), response.status
            del self.uncertain[year]
            self.acknowledged[year] = value

    def join(self):
        for thread in self._threads:
            thread.join(10)
        return len(self.acknowledged)


def check_every_acknowledged_write(server, writers):
    """Every acknowledged PUT is there with its value, every acknowledged DELETE absent, unless a
    write of that key was in flight (then its value is right too)."""
    for year in set(writers.acknowledged) | set(writers.uncertain):
        status, body = server.request_json("GET", RECORD.format(year))
        found = body["Value"] if status == 200 else None
        allowed = {writers.acknowledged.get(year)} | ({writers.uncertain[year]} if year in writers.uncertain else set())
        assert found in allowed, (year, found, allowed)


def killed_after_writes(servers, snapshot, count=5, **env):
    server = servers(GROWTH_SNAPSHOT=str(snapshot), **env)
    for year in range(count):
        assert put(server, year, year)[0] == 201
    server.process.kill()
    server.process.wait()
    return sorted(snapshot.parent.glob("growth.snapshot.journal.*"))


def record_offsets(data):
    """The byte offset of each record of a segment's bytes, as its frames chain them."""
    offsets, offset = [], len(journal_format.SEGMENT_MAGIC)
    while offset < len(data):
        offsets.append(offset)
        offset += journal_format.FRAME.size + struct.unpack_from("<I", data, offset)[0]
    return offsets


def check(*args, **env):
    """``growth-gevent check ARGS`` as a process: its CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "growth_gevent", "check", *map(str, args)], cwd=ROOT,
                          env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True, timeout=60)


def frame_v2_segment(number, *records):
    return b"GGJOURN\x02" + frame(b'["segment",%d,1,[]]\n' % number + marshal.dumps([])) + b"".join(records)


class GatedFsync:
    """Each fdatasync waits for a permit the test gives (``allow``); ``fail_next`` makes the next one
    raise EIO, as a failing disk does."""

    def __init__(self, monkeypatch):
        self._permits = threading.Semaphore(0)
        self.waiting = 0
        self.fail_next = False
        real = os.fdatasync

        def fdatasync(descriptor):
            self.waiting += 1
            self._permits.acquire()
            self.waiting -= 1
            if self.fail_next:
                self.fail_next = False
                raise OSError(errno.EIO, "Input/output error")
            real(descriptor)

        monkeypatch.setattr(journal_module.os, "fdatasync", fdatasync)

    def allow(self, count=1):
        self._permits.release(count)

    def wait_until_waiting(self):
        wait_for(lambda: gevent.sleep(0.001) or self.waiting > 0)


def written_in_another_boot(segment):
    """Make ``segment`` say that it was written before the machine last started: its link's boot id changed
    (same length, so every byte after it stays where it was), as a real restart would leave it."""
    data = segment.read_bytes()
    start = len(journal_format.SEGMENT_MAGIC)
    length = struct.unpack_from("<I", data, start)[0]
    end = start + journal_format.FRAME.size + length
    link = json.loads(data[start + journal_format.FRAME.size:end])
    link[5] = "00000000-0000-4000-8000-000000000000" if link[5] != "00000000-0000-4000-8000-000000000000" else (
        "11111111-1111-4111-8111-111111111111")
    segment.write_bytes(data[:start] + frame(json.dumps(link, separators=(",", ":")).encode()) + data[end:])
    return link[5]


def refused_by_start_up_and_check(snapshot, said):
    """Start-up exits 2 saying ``said``, ``check`` and ``check --repair`` exit 2 saying it too, and no file of the
    store changed (the lock file aside: it holds the pid of the last process that took it)."""
    files = {path: path.read_bytes() for path in snapshot.parent.iterdir() if path.suffix != ".lock"}
    refused = start_fails(GROWTH_SNAPSHOT=str(snapshot))
    assert refused.returncode == 2, refused.stderr
    assert f"cannot start: {said}" in refused.stderr
    for args in [(), ("--repair",)]:
        checked = check(snapshot, *args)
        assert checked.returncode == 2, checked.stdout + checked.stderr
        assert said in checked.stdout
        assert "Traceback" not in checked.stderr and "never acknowledged" not in checked.stdout
    assert {path: path.read_bytes() for path in files} == files
