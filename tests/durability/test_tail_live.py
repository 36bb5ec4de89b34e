"""The tail tells the truth (issue 42): a last record whose every byte is there but whose checksum fails is
not what a crash of the process leaves (a kill -9 leaves every byte that write(2) took; a partial write
leaves a file cut short). With no machine restart since its segment was written (the boot id in its link
tells) it is damage: start-up and ``check`` exit 2 naming the file and the byte. After a restart it may be
a crash of the machine: dropped with a warning that it may have been acknowledged, never that it was not."""

import pytest

from tests.helpers.durability import check, put, record_offsets, refused_by_start_up_and_check, written_in_another_boot

RECORD = "/api/v1/growth/A/B/1"


def last_write_flipped(servers, snapshot, last):
    """PUT 1 then ``last`` ("put": PUT 2; "delete": DELETE) of one key, acknowledged, kill -9, then one bit
    flipped in the payload of the last record: every byte of it is still there."""
    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    assert put(server, 1, 1)[0] == 201
    if last == "put":
        assert put(server, 1, 2)[0] == 200
    else:
        assert server.request("DELETE", RECORD)[0] == 204
    server.process.kill()
    server.process.wait()
    [segment] = snapshot.parent.glob("growth.snapshot.journal.*")
    data = bytearray(segment.read_bytes())
    data[-2] ^= 0x01
    segment.write_bytes(data)
    return segment, record_offsets(data)[-1]


@pytest.mark.parametrize("last", ["put", "delete"])
def test_a_changed_last_record_with_no_restart_since_is_damage_for_start_up_and_check(servers, tmp_path, last):
    snapshot = tmp_path / "growth.snapshot"
    segment, at = last_write_flipped(servers, snapshot, last)
    refused_by_start_up_and_check(snapshot, f"{segment} is damaged: a record whose checksum does not match at byte "
                                            f"{at}, every byte of it there, and the machine has not restarted since "
                                            "the segment was written")


@pytest.mark.parametrize("last", ["put", "delete"])
def test_a_changed_last_record_after_a_restart_is_dropped_saying_it_may_have_been_acknowledged(servers, tmp_path,
                                                                                              last):
    snapshot = tmp_path / "growth.snapshot"
    segment, at = last_write_flipped(servers, snapshot, last)
    written_in_another_boot(segment)
    said = (f"bytes from byte {at} (a record whose checksum does not match, every byte of it there): the machine "
            "restarted since the segment was written")
    checked = check(snapshot)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert said in checked.stdout and "it may have been acknowledged" in checked.stdout
    assert "never acknowledged" not in checked.stdout

    server = servers(GROWTH_SNAPSHOT=str(snapshot))
    [warning] = [line for line in server.lines if f"{segment} ends in" in line]
    assert said in warning and "it may have been acknowledged" in warning and "never" not in warning
    assert server.request_json("GET", RECORD)[1]["Value"] == 1  # what the files still prove
