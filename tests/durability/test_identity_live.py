"""A store's files know which store they belong to (issue 42): another store's snapshot or segment put in
place of this one's (a restore from the wrong backup) stops start-up and ``check`` with exit 2 naming the
file and both identities, before anything is applied; files of the format before identities are read, with
a warning, so that an upgrade keeps its data."""

import json
import marshal
import shutil
import zlib

import pytest

from growth_gevent.durability.journal_format import frame, put_record
from growth_gevent.testing import start_fails
from tests.helpers.durability import check, put, refused_by_start_up_and_check


def store_with_a_snapshot_and_a_segment_after_it(servers, folder, value):
    """A store at ``folder``: PUTs of years 0-4 held by its snapshot (a graceful stop), then 5-9 in segment 2
    (a kill -9), every value ``value``; its snapshot path."""
    folder.mkdir()
    snapshot = folder / "growth.snapshot"
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    for year in range(5):
        assert put(server, year, value)[0] == 201
    server.terminate()
    assert server.wait_exit(20) == 0
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    for year in range(5, 10):
        assert put(server, year, value)[0] == 201
    server.process.kill()
    server.process.wait()
    assert sorted(path.name for path in folder.glob("growth.snapshot.journal.*")) == ["growth.snapshot.journal.2"]
    return snapshot


def store_of(snapshot):
    return json.loads(snapshot.read_bytes().partition(b"\n")[0])["store"]


def test_another_stores_snapshot_restored_over_this_ones_stops_start_up_and_check(servers, tmp_path):
    mine = store_with_a_snapshot_and_a_segment_after_it(servers, tmp_path / "a", 1)
    other = store_with_a_snapshot_and_a_segment_after_it(servers, tmp_path / "b", 2)
    mine_id, other_id = store_of(mine), store_of(other)
    assert mine_id != other_id
    shutil.copyfile(other, mine)  # the same layout: it names segment 2 too
    refused_by_start_up_and_check(mine, f"{mine} belongs to another store: it names store {other_id}, and "
                                        f"{mine}.id names store {mine_id}")


def test_another_stores_segment_put_in_place_of_this_ones_stops_start_up_and_check(servers, tmp_path):
    mine = store_with_a_snapshot_and_a_segment_after_it(servers, tmp_path / "a", 1)
    other = store_with_a_snapshot_and_a_segment_after_it(servers, tmp_path / "b", 2)
    shutil.copyfile(f"{other}.journal.2", f"{mine}.journal.2")
    refused_by_start_up_and_check(mine, f"{mine}.journal.2 belongs to another store: it names store "
                                        f"{store_of(other)}, and {mine}.id names store {store_of(mine)}")


def test_another_stores_snapshot_is_refused_even_where_no_segment_is_left_to_tell(servers, tmp_path):
    mine = store_with_a_snapshot_and_a_segment_after_it(servers, tmp_path / "a", 1)
    other = store_with_a_snapshot_and_a_segment_after_it(servers, tmp_path / "b", 2)
    mine_id = store_of(mine)
    for snapshot in (mine, other):  # graceful stops: each folder holds its snapshot and no segment
        server = servers(GROWTH_SNAPSHOT=str(snapshot))
        server.terminate()
        assert server.wait_exit(20) == 0
    assert not list(mine.parent.glob("growth.snapshot.journal.*"))
    shutil.copyfile(other, mine)
    refused_by_start_up_and_check(mine, f"{mine} belongs to another store: it names store {store_of(other)}, and "
                                        f"{mine}.id names store {mine_id}")


def test_a_snapshot_and_a_segment_of_the_format_before_identities_are_served_with_a_warning(servers, tmp_path):
    """An upgrade: a version 2 snapshot and a version 3 segment after it, bytes as the version before wrote
    them (after a kill -9). Served with a warning; the files written after it name the store, and verify."""
    snapshot = tmp_path / "growth.snapshot"
    document = b'{"format":"growth-gevent-snapshot","version":2,"count":1,"journal":2,"records":[["A","B",0,0]]}\n'
    snapshot.write_bytes(document + b"crc32 %08x\n" % zlib.crc32(document))
    segment = tmp_path / "growth.snapshot.journal.2"
    segment.write_bytes(b"GGJOURN\x03" + frame(b'["follows",1,null,null]')
                        + frame(b'["segment",2,1,[]]\n' + marshal.dumps([]))
                        + b"".join(put_record(("A", "B", year), year) for year in range(1, 4)))
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert any(f"{snapshot} is snapshot version 2, which names no store: read as it is" in line
               for line in server.lines)
    assert any(f"{segment} is of an older journal format, which names no store: read as it is" in line
               for line in server.lines)
    assert server.request_json("GET", "/api/v1/growth/size") == (200, {"size": 4})
    assert put(server, 9, 9)[0] == 201
    server.process.kill()
    server.process.wait()
    checked = check(snapshot)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    again = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert again.request_json("GET", "/api/v1/growth/size") == (200, {"size": 5})
    again.terminate()
    assert again.wait_exit(20) == 0
    assert (tmp_path / "growth.snapshot.id").read_text().startswith(f"growth-gevent store {store_of(snapshot)}\n")
    assert check(snapshot).returncode == 0


@pytest.mark.parametrize("damage", ["another store's snapshot", "a damaged marker"])
def test_repair_cuts_no_torn_tail_beside_damage(servers, tmp_path, damage):
    """A torn tail in the newest segment (a kill -9 mid-write) beside damage: ``check --repair`` exits 2, as its
    words say, "--repair does not change damage", and changes no byte, the torn tail included; start-up too."""
    mine = store_with_a_snapshot_and_a_segment_after_it(servers, tmp_path / "a", 1)
    segment = mine.parent / "growth.snapshot.journal.2"
    segment.write_bytes(segment.read_bytes()[:-3])
    if damage == "a damaged marker":
        said = f"{mine}.id is damaged"
        with open(f"{mine}.id", "ab") as marker:
            marker.write(b"x")
    else:
        other = store_with_a_snapshot_and_a_segment_after_it(servers, tmp_path / "b", 2)
        shutil.copyfile(other, mine)
        said = f"{mine} belongs to another store"
    files = {path: path.read_bytes() for path in mine.parent.iterdir() if path.suffix != ".lock"}
    assert start_fails(GROWTH_SNAPSHOT=str(mine)).returncode == 2
    repaired = check(mine, "--repair")
    assert repaired.returncode == 2, repaired.stdout + repaired.stderr
    assert said in repaired.stdout and "repaired:" not in repaired.stdout
    assert {path: path.read_bytes() for path in files} == files
