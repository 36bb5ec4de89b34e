"""A bulk body, JSON or CSV, made into records: one parse at a time in the process (its parse slot),
with no garbage collection while it runs, after the body's separators have been counted against the
records it may hold."""

import contextlib
import gc
from collections.abc import Callable, Iterator

import falcon
from gevent.lock import Semaphore

from ..core.loop import let_io_run
from ..core.records import Record, parse_records
from ..http.responses import RETRY_AFTER_SECONDS
from . import csv_format
from .strict_json import parse_json, utf8_text

# How long a bulk POST waits for its process's one parse slot before a 503: a few parses of the
# largest body (what one takes: docs/performance.md#a-bulk-parses-time).
PARSE_WAIT_SECONDS = 2.0
# JSON separators (`,` `:` `{` `[`) that one bulk record may bring: its four fields need 9, the rest
# is room for extra fields and separators inside names. Every JSON value but the first follows one of
# them, so counting them bounds the objects a parse can make, before parsing.
SEPARATORS_PER_RECORD = 16
BULK_MEDIA_TYPES = (falcon.MEDIA_JSON, csv_format.MEDIA_TYPE)


class BulkParser:
    """Parses and validates bulk bodies, one at a time in the process.

    A parse makes ~10 objects per record inside one C call that never yields: several at once would
    multiply the peak memory and the time every other request waits. A body that holds more objects
    or separators than ``max_records`` records could need is refused (413) before it is parsed.
    """

    def __init__(self, max_records: int, wait_seconds: float = PARSE_WAIT_SECONDS) -> None:
        self._max_records = max_records
        self._wait_seconds = wait_seconds
        self._slot = Semaphore()

    def parse(self, body: bytes | bytearray, check_room: Callable[[int], object], media_type: str = falcon.MEDIA_JSON
              ) -> list[Record]:
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
    def slot(self) -> Iterator[None]:
        """The process's one parse slot, waited for at most ``wait_seconds`` (503 past them)."""
        if not self._slot.acquire(timeout=self._wait_seconds):
            raise falcon.HTTPServiceUnavailable(description="too many bulk loads waiting to be parsed; retry later",
                                                retry_after=RETRY_AFTER_SECONDS)
        try:
            yield
        finally:
            self._slot.release()

    def _check_size(self, body: bytes | bytearray, is_csv: bool) -> int:
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


def _keys_surely_unique(payload: object, objects: int, colons: int) -> bool:
    """True when no object of a parsed bulk body can name a key twice: its ``objects`` (braces in the
    body) are all records of the array, none nested, and their fields add up to its ``colons``. A brace or
    colon inside a string spoils the count, and then the keys are checked by parsing again."""
    if type(payload) is not list:
        return True  # not records: refused as such
    fields = [len(item) for item in payload if type(item) is dict]
    return len(fields) == objects and sum(fields) == colons


def parse_csv(body: bytes | bytearray) -> list[Record]:
    """The records of a UTF-8 CSV bulk body (csv_format.parse_records), or a 400 saying why it is not CSV."""
    text = utf8_text(body)
    if not text.strip():
        raise falcon.HTTPBadRequest(description="request body is empty")
    try:
        return csv_format.parse_records(text, pause=let_io_run)
    except csv_format.InvalidCSV as error:
        raise falcon.HTTPBadRequest(description=str(error)) from None


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
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
