"""The files prove their own history (issue 34), as real processes leave them: segments written by servers
killed with kill -9, then cut, flipped, emptied or removed between restarts. Anything wrong in a segment
that has a successor, or a journal that does not begin where the snapshot ends, stops start-up and
``check`` with exit 2 naming the file (and the byte), and ``check --repair`` changes nothing; only the
newest segment may end torn."""

import random
import threading

import pytest

from growth_gevent.durability.journal_format import put_record
from growth_gevent.testing import start_fails, wait_for
from tests.helpers.durability import (
    WRITERS,
    Writers,
    check,
    check_every_acknowledged_write,
    frame_v2_segment,
    put,
    record_offsets,
    refused_by_start_up_and_check,
)


def killed_after(servers, snapshot, years, **env):
    """A server on ``snapshot`` that PUTs ``years`` (each its own value), then dies by kill -9."""
    server = servers(GROWTH_SNAPSHOT=str(snapshot), **env)
    for year in years:
        assert put(server, year, year)[0] == 201
    server.process.kill()
    server.process.wait()
    return server


def segments(snapshot):
    return sorted(snapshot.parent.glob(f"{snapshot.name}.journal.*"), key=lambda path: int(path.suffix[1:]))


def stopped_after(servers, snapshot, years):
    """A server on ``snapshot`` that PUTs ``years``, then stops gracefully: the snapshot holds them all."""
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    for year in years:
        assert put(server, year, year)[0] == 201
    server.terminate()
    assert server.wait_exit(20) == 0


def two_segments(servers, snapshot):
    """Segments 1 and 2, each holding five acknowledged PUTs, as two servers killed in turn leave them."""
    killed_after(servers, snapshot, range(5))
    killed_after(servers, snapshot, range(5, 10))
    first, second = segments(snapshot)
    assert (first.name, second.name) == ("growth.snapshot.journal.1", "growth.snapshot.journal.2")
    return first, second


def cut_mid_record(first, second):
    data = first.read_bytes()
    first.write_bytes(data[:-4])
    return f"{first} is damaged: a record cut short at byte {record_offsets(data)[-1]}, and {second} follows it"


def flip_a_bit_in_the_last_record(first, second):
    data = bytearray(first.read_bytes())
    data[-3] ^= 0x01  # in the payload of the last PUT: its checksum no longer matches
    first.write_bytes(data)
    return (f"{first} is damaged: a record whose checksum does not match at byte {record_offsets(data)[-1]}, and "
            f"{second} follows it")


def empty(first, second):
    size = first.stat().st_size
    first.write_bytes(b"")
    return f"{first} is damaged: it ends at byte 0, and {second} says it ended at byte {size}"


def cut_at_a_record_boundary(first, second):
    data = first.read_bytes()
    first.write_bytes(data[:record_offsets(data)[-1]])  # the last PUT gone whole: every record left is valid
    return (f"{first} is damaged: it ends at byte {record_offsets(data)[-1]}, and {second} says it ended at byte "
            f"{len(data)}")


def delete(first, second):
    first.unlink()
    return f"{second} begins the journal, and there is no snapshot"


@pytest.mark.parametrize("damage", [cut_mid_record, flip_a_bit_in_the_last_record, empty, cut_at_a_record_boundary,
                                    delete])
def test_damage_to_a_segment_that_has_a_successor_stops_start_up_and_check_naming_the_file(servers, tmp_path, damage):
    snapshot = tmp_path / "growth.snapshot"
    first, second = two_segments(servers, snapshot)
    refused_by_start_up_and_check(snapshot, damage(first, second))  # --repair never cuts damage


def test_a_gap_in_the_segment_numbers_stops_start_up_and_check(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    for run in range(3):
        killed_after(servers, snapshot, [run])
    first, second, third = segments(snapshot)
    second.unlink()
    said = f"segments of {snapshot}.journal.* are missing between 1 and 3"
    refused = start_fails(GROWTH_SNAPSHOT=str(snapshot))
    assert refused.returncode == 2 and said in refused.stderr
    checked = check(snapshot, "--repair")
    assert checked.returncode == 2 and said in checked.stdout
    assert segments(snapshot) == [first, third]


def test_the_snapshot_removed_with_the_segments_after_it_beside_it_stops_start_up(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    stopped_after(servers, snapshot, range(5))  # the snapshot holds them, and names segment 2 as the next
    killed_after(servers, snapshot, range(5, 10))
    [second] = segments(snapshot)
    assert second.name == "growth.snapshot.journal.2"
    snapshot.unlink()
    said = (f"{second} begins the journal, and there is no snapshot {snapshot} to hold segments 1-1 before it: the "
            "snapshot, or those segments, were removed")
    refused = start_fails(GROWTH_SNAPSHOT=str(snapshot))
    assert refused.returncode == 2 and f"cannot start: {said}" in refused.stderr
    checked = check(snapshot)
    assert checked.returncode == 2 and said in checked.stdout


def test_an_older_snapshot_that_does_not_reach_the_first_segment_stops_start_up(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    stopped_after(servers, snapshot, [0])
    older = snapshot.read_bytes()  # names segment 2 as the next
    stopped_after(servers, snapshot, [1])  # segment 2 held, removed: the snapshot names 3
    killed_after(servers, snapshot, [2])
    [third] = segments(snapshot)
    assert third.name == "growth.snapshot.journal.3"
    snapshot.write_bytes(older)
    said = f"{snapshot}.journal.2, the first segment after the snapshot, is missing (the journal begins at segment 3)"
    refused = start_fails(GROWTH_SNAPSHOT=str(snapshot))
    assert refused.returncode == 2 and f"cannot start: {said}" in refused.stderr
    assert said in check(snapshot).stdout


def test_only_the_newest_segment_may_end_torn_and_start_up_cuts_it_before_the_next_begins(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    first, second = two_segments(servers, snapshot)
    whole = second.read_bytes()
    second.write_bytes(whole[:-4])  # a crash in the middle of the last write
    cut = record_offsets(whole)[-1]
    torn = check(snapshot)
    assert torn.returncode == 1, torn.stdout
    assert f"{second}: torn tail: {len(whole) - 4 - cut} bytes from byte {cut} (a record cut short)" in torn.stdout
    assert f"{first}: ok" in torn.stdout

    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert any(f"{second} ends in a torn record at byte {cut}" in line for line in server.lines)
    assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 9})
    assert second.read_bytes() == whole[:cut]  # cut before segment 3 began after it
    assert put(server, 20, 20)[0] == 201
    server.process.kill()
    server.process.wait()

    assert [path.name for path in segments(snapshot)][-1] == "growth.snapshot.journal.3"
    assert check(snapshot).returncode == 0
    again = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert again.request_json("GET", "/api/v1/growth/size") == (200, {"size": 10})
    assert not any("torn" in line for line in again.lines)


def test_check_repair_cuts_the_newest_segments_torn_tail_and_start_up_then_serves_it_all(servers, tmp_path):
    snapshot = tmp_path / "growth.snapshot"
    _, second = two_segments(servers, snapshot)
    whole = second.read_bytes()
    second.write_bytes(whole[:-4])
    repaired = check(snapshot, "--repair")
    assert repaired.returncode == 0, repaired.stdout
    assert second.read_bytes() == whole[:record_offsets(whole)[-1]]
    assert check(snapshot).returncode == 0
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 9})


def test_a_kill_9_at_any_moment_leaves_a_chain_that_verifies_and_every_acknowledged_write(servers, tmp_path):
    """The chain is strict, and real crashes never break it: 16 writers, a snapshot a second (each one
    begins a segment), kill -9 at a random moment, four times over; each time ``check`` finds no damage
    and the next start serves every write acknowledged before each crash (GROWTH_FSYNC=always)."""
    snapshot = tmp_path / "growth.snapshot"
    runs = []
    for run in range(4):
        server = servers(GROWTH_SNAPSHOT=str(snapshot), GROWTH_SNAPSHOT_INTERVAL="1")
        if runs:
            check_every_acknowledged_write(server, runs[-1])
        writers = Writers(server, first_year=run * WRITERS * 1000)
        runs.append(writers)
        wait_for(lambda writers=writers: len(writers.acknowledged) > 200)
        threading.Event().wait(random.uniform(0, 1.5))  # between snapshots, or during one
        server.process.kill()
        server.process.wait()
        assert writers.join() > 0
        checked = check(snapshot)
        assert checked.returncode in (0, 1), checked.stdout + checked.stderr
    again = servers(GROWTH_SNAPSHOT=str(snapshot))
    for writers in runs:
        check_every_acknowledged_write(again, writers)


def test_an_upgrade_after_a_crash_reads_version_2_segments_and_chains_the_next_to_them(servers, tmp_path):
    """Segments of the format before the link, as a crash of the version before left them (the newest
    torn): served, the torn tail cut, and the segment begun after them linked to the last; after another
    kill -9 the chain verifies."""
    snapshot = tmp_path / "growth.snapshot"
    first = tmp_path / "growth.snapshot.journal.1"
    first.write_bytes(frame_v2_segment(1, *(put_record(("A", "B", year), year) for year in range(3)))
                      + put_record(("A", "B", 3), 3)[:-2])
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 3})
    assert put(server, 9, 9)[0] == 201
    server.process.kill()
    server.process.wait()
    assert check(snapshot).returncode == 0
    again = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert again.request_json("GET", "/api/v1/growth/size") == (200, {"size": 4})
