"""Integrity at rest (issue 25): damage is told from a torn tail and refused, never loaded silently."""

import errno
import os
import pathlib
import subprocess
import time

import pytest

from growth_gevent.testing import holds_for, start_fails, wait_for
from tests.helpers.durability import check, killed_after_writes, record_offsets


def test_a_damaged_length_mid_journal_stops_start_up_naming_the_file_and_the_offset(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    [segment] = killed_after_writes(servers, snapshot, count=200)
    data = bytearray(segment.read_bytes())
    damaged = record_offsets(data)[100]  # the 100th PUT: its header is record 0
    data[damaged + 3] ^= 0x10  # the length's high byte: the frame now runs past the end of the file
    segment.write_bytes(data)

    refused = start_fails(GROWTH_SNAPSHOT=str(snapshot))
    assert refused.returncode == 2
    assert f"cannot start: {segment} is damaged" in refused.stderr
    assert f"at byte {damaged}" in refused.stderr
    assert segment.read_bytes() == data


@pytest.mark.parametrize("before, after", [(b"183.26", b"183.27"), (b"NGDP_R", b"LGDP_R")])
def test_a_bit_flipped_in_the_snapshot_refuses_to_start_naming_the_file(servers, tmp_path, before, after):
    snapshot = tmp_path / "growth.snapshot"
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert server.request_json("PUT", "/api/v1/growth/BRZ/NGDP_R/2002", {"value": 183.26})[0] == 201
    server.terminate()
    assert server.wait_exit(20) == 0  # all the data is in the snapshot now
    damaged = snapshot.read_bytes().replace(before, after)
    assert damaged != snapshot.read_bytes()
    snapshot.write_bytes(damaged)

    refused = start_fails(GROWTH_SNAPSHOT=str(snapshot))
    assert refused.returncode == 2
    assert f"cannot start: {snapshot} is damaged: its checksum does not match" in refused.stderr
    assert snapshot.read_bytes() == damaged


def test_check_verifies_a_snapshot_and_its_journal_read_only_and_repair_cuts_only_a_torn_tail(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    server = servers(GROWTH_SNAPSHOT=str(snapshot), GROWTH_SNAPSHOT_INTERVAL="1")
    assert server.request_json("PUT", "/api/v1/growth/A/B/1", {"value": 1})[0] == 201
    server.wait_for_line("snapshot written: 1 records", 10)
    for year in range(4):
        assert server.request_json("PUT", f"/api/v1/growth/C/D/{year}", {"value": year})[0] == 201
    server.process.kill()
    server.process.wait()
    [segment] = snapshot.parent.glob("growth.snapshot.journal.*")

    healthy = check(snapshot)
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert f"{snapshot}: ok: checksum verified, 1 record" in healthy.stdout
    assert f"{segment}: ok" in healthy.stdout

    whole = segment.read_bytes()
    segment.write_bytes(whole[:-4])  # a crash in the middle of the last write
    torn = check(GROWTH_SNAPSHOT=str(snapshot))  # the path from the environment, as the service takes it
    assert torn.returncode == 1
    cut = record_offsets(whole)[-1]
    assert (f"{segment}: torn tail: {len(whole) - 4 - cut} bytes from byte {cut} (a record cut short): 1 record "
            "cut short, never acknowledged") in torn.stdout
    assert f"--repair would truncate {segment} to {cut} bytes" in torn.stdout
    assert segment.read_bytes() == whole[:-4]  # read-only

    repaired = check(snapshot, "--repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert f"repaired: {segment} truncated to {cut} bytes" in repaired.stdout
    assert segment.read_bytes() == whole[:cut]
    assert check(snapshot).returncode == 0
    again = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert again.request_json("GET", "/api/v1/growth/size") == (200, {"size": 4})  # A/B/1, C/D/0-2
    assert not any("torn" in line for line in again.lines)


def test_check_says_what_is_damaged_and_repair_leaves_damage_as_it_is(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    [segment] = killed_after_writes(servers, snapshot, count=5)
    data = bytearray(segment.read_bytes())
    damaged = record_offsets(data)[2]
    data[damaged + 3] ^= 0x10
    segment.write_bytes(data)
    for args in [(), ("--repair",)]:
        result = check(snapshot, *args)
        assert result.returncode == 2
        assert f"{segment} is damaged: a record header whose checksum does not match at byte {damaged}" in result.stdout
        assert "--repair does not change damage" in result.stdout
        assert segment.read_bytes() == data

    snapshot.write_bytes(b'{"format": "growth-gevent-snapshot", "version": 2, "count": 0, "records": []}\ncrc32 0\n')
    result = check(snapshot)
    assert result.returncode == 2
    assert f"{snapshot} is damaged: its checksum does not match" in result.stdout


def test_check_repair_refuses_while_a_server_owns_the_snapshot(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    result = check(snapshot, "--repair")
    assert result.returncode == 2
    assert f"is in use by another process (pid {server.process.pid})" in result.stdout + result.stderr
    assert check(snapshot).returncode == 0  # reading is allowed


@pytest.fixture
def small_disk(tmp_path):
    """A real 8 MiB tmpfs, mounted on a folder of the test's (the suite runs as root, as in its container)."""
    folder = tmp_path / "disk"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(folder)], check=True)
    yield folder
    subprocess.run(["umount", "--lazy", str(folder)], check=True)


def fill(folder):
    """A file that takes every byte left on ``folder``'s file system."""
    filler = folder / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(descriptor, bytes(65536)):
            pass
    except OSError as error:
        assert error.errno == errno.ENOSPC
    finally:
        os.close(descriptor)
    return filler


def cpu_seconds(pid):
    """User and system CPU time of process ``pid`` so far, from /proc/PID/stat."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_full_disk_is_calm_says_so_on_ready_and_writes_come_back_within_seconds_of_space(servers, small_disk):
    snapshot = small_disk / "growth.snapshot"
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert server.request_json("PUT", "/api/v1/growth/A/B/0", {"value": 0})[0] == 201
    filler = fill(small_disk)
    statuses = [server.request_json("PUT", f"/api/v1/growth/A/B/{year}", {"value": year})[0]
                for year in range(1, 600)]  # until the journal's last page is full too
    assert statuses[-1] == 503 and set(statuses) == {201, 503}
    wait_for(lambda: server.request("GET", "/ready")[0] == 503)
    status, body = server.request_json("GET", "/ready")
    assert body["msg"].startswith("writes are refused until a snapshot succeeds") and "No space left" in body["msg"]
    assert "growth_writes_refused 1.0" in server.request("GET", "/metrics")[1].decode()

    server.read_available_lines()
    lines, cpu = len(server.lines), cpu_seconds(server.process.pid)
    files = set(os.listdir(small_disk))
    holds_for(lambda: set(os.listdir(small_disk)) == files, 4)  # no file created (nor removed) per attempt
    assert cpu_seconds(server.process.pid) - cpu < 0.5
    server.read_available_lines()
    assert len(server.lines) - lines <= 2  # the transition said once; the retries backing off say nothing new
    assert sum("failed" in line for line in server.lines) <= 2

    filler.unlink()
    freed = time.monotonic()
    wait_for(lambda: server.request_json("PUT", "/api/v1/growth/A/B/1000", {"value": 1})[0] == 201, timeout=10)
    assert time.monotonic() - freed < 3
    assert server.request_json("GET", "/ready") == (200, {"msg": "ready"})
    assert "growth_writes_refused 0.0" in server.request("GET", "/metrics")[1].decode()
    server.read_available_lines()
    assert sum("writes are accepted again" in line for line in server.lines) == 1
