"""Reading a JSON request body: media type, size limit, the process's body budget, chunked uploads,
strict parsing; and bulk bodies, JSON or CSV, parsed one at a time."""

import contextlib
import gc
import json
import sys

import falcon
from gevent.lock import Semaphore

from ..core.loop import let_io_run
from ..core.records import parse_records, underflows
from ..http.head import ContentTooLarge
from ..http.responses import RETRY_AFTER_SECONDS
from . import csv_format

_READ_BLOCK = 64 * 1024
# A body's first read: a PUT's whole body, and all that a body that has sent nothing yet is charged.
_FIRST_READ_BYTES = 4 * 1024
# How long a bulk POST waits for its process's one parse slot before a 503: a few parses of the
# largest body (what one takes: docs/performance.md#a-bulk-parses-time).
PARSE_WAIT_SECONDS = 2.0
# JSON separators (`,` `:` `{` `[`) that one bulk record may bring: its four fields need 9, the rest
# is room for extra fields and separators inside names. Every JSON value but the first follows one of
# them, so counting them bounds the objects a parse can make, before parsing.
SEPARATORS_PER_RECORD = 16
BULK_MEDIA_TYPES = (falcon.MEDIA_JSON, csv_format.MEDIA_TYPE)

# Quoted in a message: enough to recognise, never the body.
_QUOTED_CHARS = 40


class _DuplicateKey(ValueError):
    """An object names a key twice: JSON readers disagree on which value counts (RFC 8259 §4), so no
    guess is made (I-JSON, RFC 7493, forbids it)."""


class _Underflow(ValueError):
    """A number that is not zero but too small in size for a double: it would be read as 0."""


def _unique_keys(pairs):
    document = dict(pairs)
    if len(document) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return document


def _float(literal):
    value = float(literal)
    if underflows(literal, value):
        raise _Underflow(literal)
    return value


# The standard library's C decoder is strict where ujson is not (`01`, `1.`, `-`, raw control
# characters in strings) and as fast on bulk bodies; it shares repeated keys, so a parse takes less
# memory. Like ujson it reads NaN and Infinity, which the record checks refuse as values (422).
# Hooks cost a call per object or float in Python (docs/performance.md#the-standard-librarys-json-decoder),
# so each decoder has only those it needs: keys are checked only where a cheap count cannot vouch for them,
# floats only in a body with a negative exponent, the one way to write a number that underflows.
_DECODERS = {(unique, tiny): json.JSONDecoder(object_pairs_hook=_unique_keys if unique else None,
                                              parse_float=_float if tiny else None).decode
             for unique in (False, True) for tiny in (False, True)}


class BodyBudget:
    """Request-body bytes that the process holds at once, all requests together.

    A request reserves each read of its body before making it, so it holds what has arrived and the
    read under way, and gives the reservation back once the body and what was parsed from it are
    dropped, however the request ends: when its next read would pass the limit it is refused with a
    503 and nothing more is read. One event loop: plain counts.
    """

    def __init__(self, limit):
        self.limit = limit
        self.held = 0

    def reserve(self):
        """A reservation of no bytes yet, to grow; use it as a context manager, which gives it back."""
        return _Reservation(self)


class _Reservation:
    __slots__ = ("_budget", "size")

    def __init__(self, budget):
        self._budget = budget
        self.size = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._budget.held -= self.size
        self.size = 0

    def grow(self, size):
        budget = self._budget
        if budget.held + size > budget.limit:
            # Connection: close, as for a 413: the rest of the body is not read.
            raise falcon.HTTPServiceUnavailable(description="too many request bodies in memory; retry later",
                                                retry_after=RETRY_AFTER_SECONDS, headers={"Connection": "close"})
        budget.held += size
        self.size += size


class BulkParser:
    """Parses and validates bulk bodies, one at a time in the process.

    A parse makes ~10 objects per record inside one C call that never yields: several at once would
    multiply the peak memory and the time every other request waits. A body that holds more objects
    or separators than ``max_records`` records could need is refused (413) before it is parsed.
    """

    def __init__(self, max_records, wait_seconds=PARSE_WAIT_SECONDS):
        self._max_records = max_records
        self._wait_seconds = wait_seconds
        self._slot = Semaphore()

    def parse(self, body, check_room, media_type=falcon.MEDIA_JSON):
        """``[(key, value), ...]`` of a bulk body of ``media_type`` (one of BULK_MEDIA_TYPES), or a typed
        falcon error (413, 400, 503), or InvalidRecord.

        ``check_room(records)`` is called, once it is this body's turn, with the most records it can hold
        (its JSON objects, or its CSV lines after the header), and raises to refuse it unparsed: under a
        flood of posts to a full queue, a refusal then costs a count of bytes instead of a parse.
        """
        is_csv = media_type == csv_format.MEDIA_TYPE
        records_at_most = self._check_size(body, is_csv)
        with self.slot():
            check_room(records_at_most)
            with gc_paused():
                if is_csv:
                    return parse_csv(body)
                payload = parse_json(body, unique_keys=False)
                if not _keys_surely_unique(payload, records_at_most, body.count(b":")):
                    parse_json(body, unique_keys=True)  # a 400 naming a key given twice, if there is one
                return parse_records(payload, pause=let_io_run)

    @contextlib.contextmanager
    def slot(self):
        """The process's one parse slot, waited for at most ``wait_seconds`` (503 past them)."""
        if not self._slot.acquire(timeout=self._wait_seconds):
            raise falcon.HTTPServiceUnavailable(description="too many bulk loads waiting to be parsed; retry later",
                                                retry_after=RETRY_AFTER_SECONDS)
        try:
            yield
        finally:
            self._slot.release()

    def _check_size(self, body, is_csv):
        """The most records ``body`` can hold; a 413 when that, or its separators, are more than
        ``max_records`` records could need."""
        if is_csv:
            records, separators = csv_format.rows_at_most(body)
            holds, separators_kind = "lines after its header", "CSV separators (commas and line breaks)"
        else:
            # Each record is an object, and every value follows a separator: counted at C speed.
            records = body.count(b"{")
            separators = records + body.count(b",") + body.count(b":") + body.count(b"[")
            holds, separators_kind = "JSON objects", "JSON separators"
        if records > self._max_records:
            raise falcon.HTTPContentTooLarge(description=f"a bulk load holds at most {self._max_records} records; "
                                                         f"this body has {records} {holds}")
        most = self._max_records * SEPARATORS_PER_RECORD
        if separators > most:
            raise falcon.HTTPContentTooLarge(description=f"request body has {separators} {separators_kind}; "
                                                         f"{self._max_records} records need at most {most}")
        return records


def _keys_surely_unique(payload, objects, colons):
    """True when no object of a parsed bulk body can name a key twice: its ``objects`` (braces in the
    body) are all records of the array, none nested, and their fields add up to its ``colons``. A brace or
    colon inside a string spoils the count, and then the keys are checked by parsing again."""
    if type(payload) is not list:
        return True  # not records: refused as such
    fields = [len(item) for item in payload if type(item) is dict]
    return len(fields) == objects and sum(fields) == colons


def read_json(req, max_bytes, reservation):
    """The parsed JSON body of ``req``, or a typed falcon error (415, 413, 503, 400)."""
    request_media_type(req, (falcon.MEDIA_JSON,))
    return parse_json(read_body(req, max_bytes, reservation), unique_keys=True)


def read_body(req, max_bytes, reservation):
    """The raw bytes of a request body, charged to ``reservation`` as they are read; or a typed falcon error
    (413, 503, 408, 400). Its media type is the caller's to check first (``request_media_type``)."""
    return _read_bounded(req.stream, req.content_length, max_bytes, reservation)


def request_media_type(req, accepted):
    """The media type of ``req``'s body, lower-case and without parameters; a 415 unless in ``accepted``."""
    media_type = (req.content_type or "").split(";", 1)[0].strip().lower()
    if media_type not in accepted:
        raise falcon.HTTPUnsupportedMediaType(description=f"Content-Type must be {' or '.join(accepted)}")
    return media_type


def parse_json(body, unique_keys):
    """The document a UTF-8 JSON body holds, or a 400 saying why it is not one (a key given twice in an
    object too, with ``unique_keys``), or a 422 for numbers no field takes: one too small for a double,
    not zero but read as 0, and an integer longer than Python reads."""
    text = _decode_utf8(body)
    try:
        return _DECODERS[unique_keys, "e-" in text or "E-" in text](text)
    except _DuplicateKey as error:
        raise falcon.HTTPBadRequest(description=f"request body is not valid JSON for this service: an object "
                                                f"has the key {_quoted(error.args[0])} twice") from None
    except _Underflow as error:
        raise falcon.HTTPUnprocessableEntity(
            description=f"request body has the number {error.args[0][:_QUOTED_CHARS]}, too small for a double: "
                        f"it would be read as 0; send 0, or a number of at least 5e-324 in size") from None
    except json.JSONDecodeError as error:
        if not text.strip():
            raise falcon.HTTPBadRequest(description="request body is empty") from None
        raise falcon.HTTPBadRequest(description=f"request body is not valid JSON: {error}") from None
    except ValueError:  # the decoder's one other refusal: int() of more digits than Python reads
        raise falcon.HTTPUnprocessableEntity(
            description=f"request body has an integer of more than {sys.get_int_max_str_digits()} digits; "
                        f"no field takes one") from None
    except RecursionError:
        raise falcon.HTTPBadRequest(description="request body is not valid JSON: nested too deeply") from None


def _quoted(key):
    quoted = json.dumps(key, ensure_ascii=False)
    return quoted if len(quoted) <= _QUOTED_CHARS else quoted[:_QUOTED_CHARS] + '..."'


def parse_csv(body):
    """The records of a UTF-8 CSV bulk body (csv_format.parse_records), or a 400 saying why it is not CSV."""
    text = _decode_utf8(body)
    if not text.strip():
        raise falcon.HTTPBadRequest(description="request body is empty")
    try:
        return csv_format.parse_records(text, pause=let_io_run)
    except csv_format.InvalidCSV as error:
        raise falcon.HTTPBadRequest(description=str(error)) from None


def _decode_utf8(body):
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise falcon.HTTPBadRequest(description=f"request body is not UTF-8: {error.reason} at byte "
                                                f"{error.start}") from None


@contextlib.contextmanager
def gc_paused():
    """No garbage collection inside: for CPU-bound work that makes many objects and never yields.

    Parsing and validating a bulk body makes ~10 objects a record; collecting while they are made slows
    it down (docs/performance.md#no-garbage-collection-during-a-parse). Brief yields inside are fine (other
    greenlets run a request or two without a collector); never hold it across waiting for I/O, which can last
    any time.
    """
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _read_bounded(stream, content_length, max_bytes, reservation):
    # The Content-Length is a framing decision (413 at once), not a reservation: the body is charged
    # as it arrives, each read reserving what it may bring before it is made. A read asks for at most
    # what has arrived so far (from _FIRST_READ_BYTES, doubling to _READ_BLOCK), so a body that
    # trickles holds about what it sent, never what it declared. Chunked, the server de-chunks it and
    # it is read one byte past the limit, to tell a body over it.
    if content_length is not None and content_length > max_bytes:
        raise _too_large(max_bytes)
    expected = max_bytes + 1 if content_length is None else content_length
    body = bytearray()
    while len(body) < expected:
        size = min(_READ_BLOCK, max(_FIRST_READ_BYTES, len(body)), expected - len(body))
        reservation.grow(size)
        part = _read(stream, size)
        reservation.grow(len(part) - size)
        if not part:
            break
        body += part
    if len(body) > max_bytes:
        raise _too_large(max_bytes)
    return body


def _read(stream, size):
    try:
        return stream.read(size)
    except TimeoutError:  # the server's body deadline (GROWTH_BODY_TIMEOUT), or it is shutting down
        raise falcon.HTTPError(falcon.HTTP_408, description="request body not received in time",
                               headers={"Connection": "close"}) from None
    except ContentTooLarge as error:  # a chunk declared larger than the server takes any body
        raise _too_large(error.limit) from None
    except (OSError, ValueError):
        raise falcon.HTTPBadRequest(description="request body could not be read") from None


def _too_large(max_bytes):
    # Connection: close tells the server not to read the rest of the oversize body.
    return falcon.HTTPContentTooLarge(
        description=f"request body is larger than {max_bytes} bytes",
        headers={"Connection": "close"},
    )
