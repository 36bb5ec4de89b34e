"""``growth-gevent export [--format json|csv|ndjson] [filters] > FILE``: every record the filters match, from
``GET /api/v1/growth/export``, written to stdout as it arrives.

The answer is copied a block at a time, so the command holds one block whatever the export's size, as
``curl > FILE`` does. On a terminal, stderr shows a progress bar, its total read first from the list's
``total``; redirected, stderr says nothing but errors. A stream cut off before its end (the server gone) is
an error, exit 1, so that a script never takes a partial file for a whole one.
"""

import argparse
import http.client
import sys
import urllib.parse
from typing import BinaryIO, TextIO

from .client import REQUEST_SECONDS, LoadFailed, reason, refusal, request_json
from .load import add_url_argument
from .progress import ProgressBar

EXPORT_PATH = "/api/v1/growth/export"
LIST_PATH = "/api/v1/growth"
FORMATS = ("json", "csv", "ndjson")
BLOCK_BYTES = 64 * 1024
# What each record of an export holds once, to count them for the bar: a JSON string escapes its quotes, so
# '"Country":' is only ever a key; a CSV or NDJSON record is a line (names hold no line break).
# (mark, lines before the records): a CSV's header is a line too.
_RECORD_MARKS = {"json": (b'"Country":', 0), "csv": (b"\n", 1), "ndjson": (b"\n", 0)}
EXPORTED, FAILED = 0, 1
# A shell's code for a process ended by SIGPIPE (128 + 13): what `export | head` ends with, without a word.
BROKEN_PIPE = 141


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``export`` command's arguments, on the command line's ``export`` parser."""
    parser.add_argument("--format", choices=FORMATS, default="json",
                        help="json (an array, the default), csv (pandas' read_csv, spreadsheets) or ndjson (one "
                             "record a line; load reads it back)")
    parser.add_argument("--country", help="only this country (any case)")
    parser.add_argument("--indicator", help="only this indicator (any case)")
    parser.add_argument("--year", help="only this year")
    parser.add_argument("--from", dest="first", metavar="YEAR", help="from this year on")
    parser.add_argument("--to", dest="last", metavar="YEAR", help="up to this year")
    add_url_argument(parser)


def run(args: argparse.Namespace, out: BinaryIO | None = None, err: TextIO | None = None) -> int:
    """Write the export to ``out`` (stdout's bytes); the exit code: 0 the whole export written, 1 an error
    (stderr says which; what was written is partial), 141 stdout closed early (``| head``)."""
    out = out or sys.stdout.buffer
    err = err or sys.stderr
    filters = {name: value for name, value in (("country", args.country), ("indicator", args.indicator),
                                               ("year", args.year), ("from", args.first), ("to", args.last))
               if value is not None}
    try:
        bar = None
        if err.isatty():
            total = request_json("GET", args.url, f"{LIST_PATH}?{urllib.parse.urlencode({**filters, 'limit': 1})}")
            bar = ProgressBar(err, total["total"])
        _copy(args.url, f"{EXPORT_PATH}?{urllib.parse.urlencode({**filters, 'format': args.format})}", out,
              *_RECORD_MARKS[args.format], bar)
    except LoadFailed as error:
        print(f"error: {error}", file=err)
        return FAILED
    except BrokenPipeError:
        return BROKEN_PIPE
    return EXPORTED


def _copy(base_url: str, path: str, out: BinaryIO, mark: bytes, header_marks: int, bar: ProgressBar | None) -> None:
    """The answer's body to ``out``, a block at a time, the bar shown at each; LoadFailed on an error answer
    (the server's message) or a stream cut off."""
    parts = urllib.parse.urlsplit(base_url)
    connection_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    url = base_url + path
    connection = connection_type(parts.netloc, timeout=REQUEST_SECONDS)
    written = 0
    records = -header_marks
    tail = b""  # the end of the last block, where a mark may begin
    try:
        try:
            connection.request("GET", parts.path + path)
            response = connection.getresponse()
        except (OSError, http.client.HTTPException) as error:
            raise LoadFailed(f"cannot reach the service at {base_url}: {reason(error)}") from None
        if response.status != http.client.OK:
            raise refusal(f"GET {url}", response, response.read())
        try:
            while block := response.read1(BLOCK_BYTES):
                out.write(block)
                written += len(block)
                if bar is not None:
                    records += (tail + block).count(mark)
                    tail = block[-(len(mark) - 1):] if len(mark) > 1 else b""
                    bar.show(min(records, bar.total))
        except (OSError, http.client.HTTPException) as error:
            if isinstance(error, BrokenPipeError):
                raise
            why = "the connection closed before its end" if isinstance(error, http.client.IncompleteRead) else \
                reason(error)
            raise LoadFailed(f"the export was cut off after {written} bytes: {why}; what was written is not the "
                             f"whole export") from None
        out.flush()
        if bar is not None:
            bar.show(bar.total)
    finally:
        connection.close()
        if bar is not None:
            bar.end()
