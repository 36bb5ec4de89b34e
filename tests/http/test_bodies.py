"""The server's own body readers (growth_gevent/http/bodies.py), socket-free: a Content-Length body and a
chunked one read to their end and no further, the body limit enforced as the bytes arrive, a malformed
chunk refused by its rule, and ``Expect: 100-continue`` answered once, at the first read."""

import io

import pytest

from growth_gevent.http import bodies, head


def chunked(data: bytes, limit: int = 1000, on_first_read=None):
    return bodies.open_body(head.Framing(None, True, "t"), io.BufferedReader(io.BytesIO(data)), limit, on_first_read)


def sized(data: bytes, length: int, limit: int = 1000, on_first_read=None):
    return bodies.open_body(head.Framing(length, False, "t"), io.BufferedReader(io.BytesIO(data)), limit, on_first_read)


def test_a_sized_body_is_read_in_parts_to_its_length_and_no_further():
    body = sized(b"[1,2]GET", 5)
    assert (body.read(2), body.finished, body.read(100), body.finished, body.read(), body.read(1)) == (
        b"[1", False, b",2]", True, b"", b"")


def test_no_length_and_not_chunked_is_an_empty_body():
    body = bodies.open_body(head.Framing(None, False, "t"), io.BytesIO(b"GET / HTTP/1.1\r\n"), 1000)
    assert (body.read(), body.finished) == (b"", True)


def test_a_sized_body_that_ends_early_is_a_400():
    body = sized(b"[1", 5)
    with pytest.raises(head.BadRequest) as refused:
        body.read()
    assert (refused.value.status, refused.value.rule) == (400, "body-ended-early")
    assert not body.finished


def test_a_declared_length_over_the_limit_is_a_413_before_a_byte_is_read():
    rfile = io.BufferedReader(io.BytesIO(b"x" * 2000))
    body = bodies.open_body(head.Framing(1001, False, "t"), rfile, 1000)
    with pytest.raises(head.ContentTooLarge) as refused:
        body.read(10)
    assert (refused.value.rule, refused.value.limit, rfile.tell()) == ("body-too-large", 1000, 0)


def test_a_chunked_body_is_read_in_parts_across_chunks():
    body = chunked(b"2\r\n[1\r\n3;ext=1\r\n.5]\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT")
    parts = []
    while part := body.read(2):
        parts.append(part)
    assert (parts, body.finished) == ([b"[1", b".5", b"]"], True)


@pytest.mark.parametrize("data, rule", [
    (b"zz\r\n[]\r\n0\r\n\r\n", "malformed-chunk-size"),
    (b"\r\n", "malformed-chunk-size"),
    (b"2\n[]\r\n0\r\n\r\n", "malformed-chunk-size"),
    (b"11111111111111111\r\n", "malformed-chunk-size"),
    (b"2\r\n[]xx0\r\n\r\n", "chunk-without-crlf"),
    (b"4\r\n[]", "body-ended-early"),
    (b"2\r\n[]\r\n", "body-ended-early"),
    (b"2\r\n[]\r\n0\r\nX Bad: 1\r\n\r\n", "invalid-field-name"),
    (b"2\r\n[]\r\n0\r\n" + b"X-T: " + b"a" * 9000 + b"\r\n\r\n", "header-block-too-large"),
], ids=["not-hex", "empty-size", "bare-lf", "17-digits", "no-crlf-after-data", "ends-in-data", "ends-before-last",
        "bad-trailer", "trailers-too-large"])
def test_a_malformed_chunked_body_is_refused_by_its_rule(data, rule):
    body = chunked(data)
    with pytest.raises(head.Refusal) as refused:
        while body.read(1000):
            pass
    assert refused.value.rule == rule
    assert not body.finished


def test_a_chunk_larger_than_the_limit_is_a_413_before_its_bytes():
    rfile = io.BufferedReader(io.BytesIO(b"3E9\r\n" + b"x" * 2000))
    body = bodies.open_body(head.Framing(None, True, "t"), rfile, 1000)
    with pytest.raises(head.ContentTooLarge) as refused:
        body.read(10)
    assert (refused.value.rule, rfile.tell()) == ("chunk-too-large", 5)


def test_chunks_that_add_up_past_the_limit_are_a_413_as_they_arrive():
    body = chunked(b"258\r\n" + b"x" * 600 + b"\r\n258\r\n" + b"x" * 600 + b"\r\n0\r\n\r\n")
    assert len(body.read(600)) == 600
    with pytest.raises(head.ContentTooLarge) as refused:
        body.read(600)
    assert refused.value.rule == "body-too-large"


@pytest.mark.parametrize("make", [
    lambda calls: sized(b"[]", 2, on_first_read=lambda: calls.append(1)),
    lambda calls: chunked(b"2\r\n[]\r\n0\r\n\r\n", on_first_read=lambda: calls.append(1)),
], ids=["sized", "chunked"])
def test_the_first_read_is_announced_once(make):
    calls = []
    body = make(calls)
    assert calls == []
    assert body.read(1) + body.read() == b"[]"
    assert calls == [1]


def test_an_empty_body_announces_nothing():
    calls = []
    body = sized(b"", 0, on_first_read=lambda: calls.append(1))
    assert (body.read(), calls) == (b"", [])


class Packets(io.RawIOBase):
    """A socket's bytes as the connection buffers them: each raw read brings the next packet; asking once
    they are all taken fails, as a client that sends nothing more would leave the read waiting."""

    def __init__(self, *packets):
        self._packets = list(packets)

    def readable(self):
        return True

    def readinto(self, buffer):
        if not self._packets:
            raise AssertionError("waited for bytes the client has not sent")
        packet = self._packets.pop(0)
        buffer[:len(packet)] = packet
        return len(packet)


@pytest.mark.parametrize("framing, sent", [
    (head.Framing(8_000_000, False, "t"), [b"[" + b" " * 999, b" " * 3000]),
    (head.Framing(None, True, "t"), [b"7A1200\r\n[" + b" " * 999, b" " * 3000]),
], ids=["sized", "chunked"])
def test_a_read_hands_over_what_has_arrived_without_waiting_for_more(framing, sent):
    """What the body budget needs: a body holds the bytes its client sent, never room for those to come
    (api/body_reader.py charges what a read returns)."""
    body = bodies.open_body(framing, io.BufferedReader(Packets(*sent), 64 * 1024), 8_000_000)
    assert len(body.read(64 * 1024)) == 1000
    assert len(body.read(64 * 1024)) == 3000


def came_with_the_head(data: bytes, length: int, limit: int = 1000, on_first_read=None):
    """A sized body of ``length`` whose client sent ``data`` with its head: in the reader's buffer, as the
    handler counts it (``_DeadlineReader.start_body``); asking the socket for more fails (Packets)."""
    rfile = io.BufferedReader(Packets(data), 64 * 1024)
    arrived = len(rfile.peek())
    return rfile, bodies.open_body(head.Framing(length, False, "t"), rfile, limit, on_first_read, arrived)


def test_a_sized_body_that_came_whole_with_its_head_is_read_at_once():
    calls = []
    rfile, body = came_with_the_head(b'{"value": 1}GET', 12, on_first_read=lambda: calls.append(1))
    assert (body.read_arrived(12), body.finished, calls, rfile.read(3)) == (b'{"value": 1}', True, [1], b"GET")


@pytest.mark.parametrize("data, length, most, limit", [
    (b'{"value":', 12, 100, 1000),  # the rest still to come
    (b'{"value": 1}', 12, 11, 1000),  # more than the caller takes
    (b'{"value": 1}', 12, 100, 11),  # more than the server takes any body
], ids=["partly-there", "over-most", "over-limit"])
def test_a_body_not_all_there_or_larger_than_asked_is_not_read_at_once(data, length, most, limit):
    rfile, body = came_with_the_head(data, length, limit)
    assert body.read_arrived(most) is None
    assert rfile.read1(100) == data  # nothing of it read


def test_no_body_is_all_there_and_announces_nothing():
    calls = []
    assert (came_with_the_head(b"", 0, on_first_read=lambda: calls.append(1))[1].read_arrived(100), calls) == (b"", [])
