"""Integrity at rest (issue 25): damage is told from a torn tail and refused, never loaded silently."""

import struct

import pytest

from growth_gevent.durability import journal
from growth_gevent.testing import start_fails
from tests.live.test_durability import killed_after_writes


def record_offsets(data):
    """The byte offset of each record of a segment's bytes, as its frames chain them."""
    offsets, offset = [], len(journal.SEGMENT_MAGIC)
    while offset < len(data):
        offsets.append(offset)
        offset += journal.FRAME.size + struct.unpack_from("<I", data, offset)[0]
    return offsets


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
