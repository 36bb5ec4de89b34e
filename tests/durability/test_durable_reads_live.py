"""Under GROWTH_FSYNC=always no reply shows a write that the disk can still take back, as a real process
on a disk that fails one fdatasync with EIO shows it (an LD_PRELOAD shim over libc's, built here with cc)."""

import http.client
import itertools
import json
import subprocess
import threading

import pytest

from growth_gevent.testing import wait_for

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* While the file $EIO_TRIGGER exists, the next fdatasync takes $EIO_DELAY_US, removes it and fails
   with EIO: one failing fsync, slow enough for the test to read during it. */
int fdatasync(int descriptor) {
    static int (*real)(int);
    const char *trigger = getenv("EIO_TRIGGER");
    if (trigger != NULL && access(trigger, F_OK) == 0) {
        const char *delay = getenv("EIO_DELAY_US");
        usleep(delay == NULL ? 0 : atoi(delay));
        unlink(trigger);
        errno = EIO;
        return -1;
    }
    if (real == NULL)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    return real(descriptor);
}
"""
RECORD = "/api/v1/growth/BRZ/NGDP_R/{}"
READS = {  # what each read shows of BRZ/NGDP_R/2002
    "record": (RECORD.format(2002), lambda body: body["Value"]),
    "series": ("/api/v1/growth/BRZ/NGDP_R", lambda body: body["Values"][0]["Value"]),
    "page": ("/api/v1/growth?country=BRZ", lambda body: body["items"][0]["Value"]),
}


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shim")
    (folder / "eio.c").write_text(SHIM)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(folder / "eio.so"), str(folder / "eio.c"), "-ldl"],
                   check=True)
    return folder / "eio.so"


@pytest.fixture
def failing_disk(servers, shim, tmp_path):
    """A server journaling with GROWTH_FSYNC=always; ``fail()`` makes its next fdatasync fail after 1 s."""
    trigger = tmp_path / "fail-next-fdatasync"
    server = servers(GROWTH_SNAPSHOT=str(tmp_path / "growth.snapshot"), GROWTH_FSYNC="always",
                     LD_PRELOAD=str(shim), EIO_TRIGGER=str(trigger), EIO_DELAY_US="1000000")
    server.fail = lambda: trigger.write_text("")
    server.journal = lambda: b"".join(path.read_bytes() for path in tmp_path.glob("growth.snapshot.journal.*"))
    return server


def put(server, year, value):
    return server.request_json("PUT", RECORD.format(year), {"value": value})[0]


def shown(server, read):
    path, value_of = READS[read]
    status, body = server.request_json("GET", path)
    return status, value_of(body) if status == 200 else body


def test_a_record_a_series_and_a_page_read_while_a_write_fails_show_the_value_before_it(failing_disk):
    assert put(failing_disk, 2002, 1.0) == 201
    failing_disk.fail()
    answers = {}
    writer = threading.Thread(target=lambda: answers.setdefault("put", put(failing_disk, 2002, 2.0)))
    writer.start()
    # The write is applied in memory before its record is written, and that before the (failing) fsync.
    wait_for(lambda: b'"put","BRZ","NGDP_R",2002,2.0' in failing_disk.journal())
    readers = [threading.Thread(target=lambda read=read: answers.setdefault(read, shown(failing_disk, read)))
               for read in READS]
    for reader in readers:
        reader.start()
    for thread in [writer, *readers]:
        thread.join(10)
    assert answers == {"put": 503, "record": (200, 1.0), "series": (200, 1.0), "page": (200, 1.0)}


def test_a_reader_hammering_while_writers_run_and_one_fsync_fails_never_sees_an_undone_value(failing_disk):
    years = range(2000, 2004)
    for year in years:
        assert put(failing_disk, year, 0) == 201
    values = itertools.count(1)
    refused, seen, running = set(), [], True

    def write():
        connection = http.client.HTTPConnection("127.0.0.1", failing_disk.port, timeout=10)
        while running:
            value = next(values)
            connection.request("PUT", RECORD.format(2000 + value % 4), json.dumps({"value": value}),
                               {"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            if response.status == 503:
                refused.add(value)

    def read():
        connection = http.client.HTTPConnection("127.0.0.1", failing_disk.port, timeout=10)
        while running:
            for path in ("/api/v1/growth/BRZ/NGDP_R", "/api/v1/growth?country=BRZ", RECORD.format(2001)):
                connection.request("GET", path)
                seen.append(connection.getresponse().read())

    threads = [threading.Thread(target=write) for _ in range(4)] + [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    wait_for(lambda: len(seen) > 50)
    failing_disk.fail()
    wait_for(lambda: refused, timeout=10)
    failing_disk.wait_for_line("snapshot written", 15)  # writes are accepted again
    wait_for(lambda: len(seen) > 50 + 200)
    running = False
    for thread in threads:
        thread.join(10)
    numbers = {value for body in seen for value in _values(json.loads(body))}
    assert numbers and refused
    assert not numbers & refused, f"shown, never durable: {sorted(numbers & refused)}"


def _values(document):
    if "Values" in document:
        return [point["Value"] for point in document["Values"]]
    if "items" in document:
        return [item["Value"] for item in document["items"]]
    return [document["Value"]]
