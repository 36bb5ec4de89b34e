"""The request-head parser over the corpus in tests/http/requests/, in process: each valid head read as
expected and its body read whole by the server's own body readers, each invalid one refused with its status
by the rule named in its sidecar."""

import codecs
import io
import pathlib
import re
import tomllib

import pytest

from growth_gevent.config import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_HEADER_BYTES
from growth_gevent.core.records import MAX_NAME_URL_BYTES, MAX_REQUEST_LINE, YEAR_URL_BYTES
from growth_gevent.http import bodies, head

REQUESTS = pathlib.Path(__file__).parent / "requests"
# The invalid corpus runs with a small header budget, so that a 431 case stays a small file.
INVALID_MAX_HEADER_BYTES = 2048


def load_request(path: pathlib.Path) -> bytes:
    """A .http file's bytes: its real line ends are left out, its escapes (``\\r\\n``, ``\\x00``) decoded."""
    return codecs.escape_decode(path.read_bytes().replace(b"\n", b""))[0]


def corpus(kind):
    expected = tomllib.loads((REQUESTS / kind / "expected.toml").read_text())
    files = {path.stem: path for path in (REQUESTS / kind).glob("*.http")}
    assert set(files) == set(expected), f"{kind}: .http files and expected.toml disagree"
    return [pytest.param(load_request(files[name]), expected[name], id=name) for name in sorted(files)]


INVALID = corpus("invalid")


class _Trickle(io.RawIOBase):
    """Bytes that arrive one at a time: each raw read brings one, so a head is never in the buffer whole."""

    def __init__(self, data):
        self._data = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, buffer):
        return self._data.readinto(memoryview(buffer)[:1])


# The server's reader over bytes that arrived together (a head read from its buffer in one piece) and over bytes
# that trickle (read line by line): both read every head of the corpus alike.
READERS = {"arrived": lambda raw: io.BufferedReader(io.BytesIO(raw)),
           "trickling": lambda raw: io.BufferedReader(_Trickle(raw))}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("raw, expected", corpus("valid"))
def test_a_valid_head_is_read_and_its_body_after_it(raw, expected, reader):
    rfile = READERS[reader](raw)
    parsed = head.parse_head(rfile, DEFAULT_MAX_HEADER_BYTES)
    line, framing = parsed.request_line, parsed.framing
    body = bodies.open_body(framing, rfile, DEFAULT_MAX_BODY_BYTES)
    read = {"method": line.method, "target": line.target, "version": line.version,
            "target_length": len(line.target), "host": framing.host, "chunked": framing.chunked,
            "content_length": framing.content_length,
            "fields": [list(field) for field in parsed.fields], "field_count": len(parsed.fields),
            "body": body.read().decode("latin-1"), "rest": rfile.read().decode("latin-1")}
    assert body.finished
    assert {key: read[key] for key in {"rest", *expected}} == {"rest": "", **expected}
    if "content_length" not in expected:
        assert framing.content_length is None


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("raw, expected", INVALID)
def test_an_invalid_head_is_refused_by_its_rule(raw, expected, reader):
    with pytest.raises(head.Refusal) as refused:
        head.parse_head(READERS[reader](raw), INVALID_MAX_HEADER_BYTES)
    assert (refused.value.status, refused.value.rule) == (expected["status"], expected["rule"])


def test_every_rule_of_the_parser_is_pinned_by_a_case():
    # A rule is the argument after a refusal's message: `Refusal("message", "rule")`, or
    # `return "message", "rule"` where a helper picks both.
    source = pathlib.Path(head.__file__).read_text()
    declared = set(re.findall(r'", "([a-z0-9.-]+)"(?:, \w+)?\)?(?: from None)?$', source, re.MULTILINE))
    timeouts = {"request-line-timeout", "header-timeout"}  # need a stalled reader: the test below
    body_rules = {"chunk-too-large"}  # a chunk size, read from the body: tests/test_http.py
    assert {case.values[1]["rule"] for case in INVALID} | timeouts | body_rules == declared


def test_a_timeout_while_reading_is_a_408_with_its_rule():
    class Stalled(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, buffer):
            raise TimeoutError("no more bytes in time")

    with pytest.raises(head.RequestTimeout) as refused:
        head.read_request_line(io.BufferedReader(Stalled()))
    assert refused.value.rule == "request-line-timeout"
    with pytest.raises(head.RequestTimeout) as refused:
        head.read_fields(io.BufferedReader(Stalled()), 1000)
    assert refused.value.rule == "header-timeout"


def test_refusals_are_typed_by_status():
    assert [cls.status for cls in (head.BadRequest, head.RequestTimeout, head.ContentTooLarge, head.URITooLong,
                                   head.HeaderFieldsTooLarge)] == [400, 408, 413, 414, 431]


def test_a_chunk_larger_than_any_body_is_refused_by_its_size():
    head.check_chunk_size(1000, 1000)
    with pytest.raises(head.ContentTooLarge) as refused:
        head.check_chunk_size(2**64 - 1, 1000)
    assert (refused.value.rule, refused.value.limit, str(refused.value)) == (
        "chunk-too-large", 1000, "request body is larger than 1000 bytes")


def test_the_longest_record_url_is_read_and_one_byte_more_is_414():
    """Every record is addressable (core/records.py: MAX_NAME_URL_BYTES from MAX_REQUEST_LINE): the request
    line of two longest names and a longest year is read; a byte more and it is too long."""
    name, year = "A" * MAX_NAME_URL_BYTES, "-" + "9" * (YEAR_URL_BYTES - 1)
    longest = f"DELETE /api/v1/growth/{name}/{name}/{year} HTTP/1.1\r\n".encode()
    assert len(longest) == MAX_REQUEST_LINE - 1
    parsed = head.parse_head(READERS["arrived"](longest + b"Host: t\r\n\r\n"), DEFAULT_MAX_HEADER_BYTES)
    assert parsed.request_line.target == f"/api/v1/growth/{name}/{name}/{year}"
    with pytest.raises(head.URITooLong):
        head.parse_head(READERS["arrived"](longest.replace(b"/A", b"/AA", 1) + b"Host: t\r\n\r\n"),
                        DEFAULT_MAX_HEADER_BYTES)


def test_a_content_length_past_what_int_reads_is_refused_and_zero_padding_is_not():
    """Python's int() reads at most 4300 digits (sys.get_int_max_str_digits): a longer Content-Length is a 400 by
    the invalid-content-length rule (as nginx answers one it cannot hold), not a ValueError out of the parser;
    leading zeros count for int() but not for the length, so 5000 of them before a 5 still frame 5 bytes."""
    request = b"PUT /api/v1/growth/BRZ/NGDP_R/2002 HTTP/1.1\r\nHost: t\r\nContent-Length: %s\r\n\r\n"
    with pytest.raises(head.BadRequest) as refused:
        head.parse_head(READERS["arrived"](request % (b"1" * 4301)), DEFAULT_MAX_HEADER_BYTES)
    assert (refused.value.rule, str(refused.value)) == ("invalid-content-length", "Content-Length is too large")
    padded = head.parse_head(READERS["arrived"](request % (b"0" * 5000 + b"5")), DEFAULT_MAX_HEADER_BYTES)
    assert padded.framing.content_length == 5
