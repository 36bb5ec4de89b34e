"""``growth-gevent load FILE...``: upload bulk files, several at once, follow each until it is applied, print
the counts.

A file that fits in one bulk POST (``--max-body``, and the server's records per load) is sent as it is, in
one POST, so it is loaded all-or-nothing, as the bulk POST is. A larger one is cut into parts, one POST
each (:mod:`.bulk_parts`): the whole file is first checked with the server's own parsers, so that a bad
record anywhere sends nothing; then the parts are sent one after another, each loaded all-or-nothing, and
the file as a whole is not: if the server refuses a part for its state (the store full, a restart), the
parts before it stay loaded, and the message says up to where. A bulk load replaces records by key, so
loading the file again is safe. A server with a lower limit says it in its ``413``, and the parts are made
to fit it.

Each file is uploaded by a greenlet running plain blocking client code (http.client, time.sleep), written
as straight-line code: the command runs under gevent's monkey.patch_all (``__main__``), so the sockets and
sleeps of ``--concurrency`` uploads wait together instead of one after another.
"""

import argparse
import collections
import csv
import gzip
import http.client
import io
import json
import os
import re
import sys
import time
import urllib.parse
from collections.abc import Callable
from typing import IO, Any

import gevent.pool

from ..config import DEFAULT_BULK_MAX_RECORDS, DEFAULT_MAX_BODY_BYTES, Config
from ..core.descriptions import COUNTRY, INDICATOR, Descriptions
from ..core.logs import counted
from . import wide_tables
from .bulk_parts import CONTENT_TYPES, FORMATS, BadFile, BulkFile, format_of
from .client import TOKEN_VARIABLE, Loaded, LoadFailed, Refused, request_json
from .progress import ProgressBar

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 300.0
DEFAULT_CONCURRENCY = 4
BULK_PATH = "/api/v1/growth"
STATUS_PATH = "/api/v1/growth/post/status"
SIZE_PATH = "/api/v1/growth/size"
DESCRIPTIONS_PATHS = {COUNTRY: "/api/v1/growth/countries", INDICATOR: "/api/v1/growth/indicators"}
DESCRIPTIONS_PER_PATCH = 1000  # a tenth of what one PATCH may hold
STDIN = "-"
POLL_SECONDS = 0.05
# gzip's own default: most of the saving at a fraction of level 9's time.
GZIP_LEVEL = 6
# The limits a 413 names (api/body_reader.py, api/bulk_parser.py): the body's bytes, or the records of one load.
_BYTES_LIMIT = re.compile(r"larger than ([0-9]+) bytes")
_RECORDS_LIMIT = re.compile(r"holds at most ([0-9]+) records")
# The exit codes (docs/operations.md, Loading files): every file loaded, none, a usage error or a file unread,
# some files loaded and the others not at all, a file loaded in part (a part of a file sent in several refused).
LOADED, FAILED, UNREADABLE, SOME_FAILED, PARTIAL = 0, 1, 2, 3, 4
# After a file sent in parts, the bulk status (count, total) is its last part's, which a user may not expect.
LAST_PART_ONLY = "/post/status counts the last part only"


def add_url_argument(parser: argparse.ArgumentParser) -> None:
    """``--url``, by default this machine's server on the port the settings give (PORT)."""
    parser.add_argument("--url", type=service_url,
                        help=f"the service's base URL (default: http://127.0.0.1:$PORT, {DEFAULT_URL} when PORT is "
                             "unset)")


def with_url(args: argparse.Namespace, config: Config) -> argparse.Namespace:
    """``args`` with the service's URL, when not given: this machine's server on the settings' PORT."""
    if args.url is None:
        args.url = service_url(f"http://127.0.0.1:{config.port}")
    return args


def with_settings(args: argparse.Namespace, config: Config) -> argparse.Namespace:
    """The ``load`` command's ``args`` with what was not given taken from the settings, as the server reads
    them: its URL on this machine, and the largest body it takes."""
    if args.max_body is None:
        args.max_body = config.max_body_bytes
    return with_url(args, config)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``load`` command's arguments, on the command line's ``load`` parser."""
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="a JSON array of Country/Indicator/Value/Year records, NDJSON (one a line, as export "
                             "writes it), CSV, or a wide table (one column a year: the IMF's WEO .xls and the World "
                             f"Bank's CSV as published, others with --country-column); {STDIN} reads standard input")
    add_url_argument(parser)
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"seconds to wait for each file to be applied (default: {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--format", choices=FORMATS,
                        help="read every FILE as this (default: by its extension, .csv, .ndjson or .jsonl, .json; "
                             "else by its first character: [ JSON, { NDJSON, anything else CSV)")
    parser.add_argument("--country-column", metavar="NAME",
                        help="a wide table's column of country codes, one column a year (the IMF's WEO and the "
                             "World Bank's files are known without it): docs/operations.md, Loading files")
    parser.add_argument("--indicator-column", metavar="NAME", help="a wide table's column of indicator codes")
    parser.add_argument("--max-body", type=_positive_integer, metavar="BYTES",
                        help=f"the largest body sent (default: GROWTH_MAX_BODY_BYTES, {DEFAULT_MAX_BODY_BYTES} when "
                             "unset, as the server reads it; a server with less says so in a 413, and the parts "
                             "shrink to fit). A larger file is checked whole, then sent as several POSTs, each loaded "
                             "all-or-nothing but not the file as a whole: docs/operations.md, Loading files")
    parser.add_argument("--gzip", action="store_true",
                        help="send each body gzipped (Content-Encoding: gzip): a quarter of the bytes, for a slow "
                             "link; the server's limit is on the bytes inflated")
    parser.add_argument("--token", help=f"the bearer token, for a server that requires one (default: "
                                        f"${TOKEN_VARIABLE}, which other users cannot read in the process list)")
    parser.add_argument("--concurrency", type=_positive_integer, default=DEFAULT_CONCURRENCY, metavar="N",
                        help=f"files uploaded at once (default: {DEFAULT_CONCURRENCY})")


def run(args: argparse.Namespace) -> int:
    """Upload ``args.files`` to ``args.url``, ``args.concurrency`` at once; the exit code: 0 every file
    loaded, 1 none, 3 some files and the others not at all (stderr names them), 4 a file loaded in part, 2 a file
    unreadable (nothing sent) or a usage error."""
    if args.files.count(STDIN) > 1:
        print(f"error: {STDIN} (standard input) can be given once", file=sys.stderr)
        return UNREADABLE
    for path in args.files:
        try:
            if path != STDIN:
                open(path, "rb").close()  # only opened: each file is read when its upload starts (_read)
        except OSError as error:
            print(f"error: {_cannot_read(path, error)}", file=sys.stderr)
            return UNREADABLE
    token = args.token or os.environ.get(TOKEN_VARIABLE, "").strip()
    several = len(args.files) > 1

    def attempt(path: str) -> Loaded | LoadFailed:
        try:
            head, open_file = _source(path)
            file_format = args.format or format_of(path, head)
            uploader = Upload(args, token, label=path if several else "")
            table = _wide_table(path, head, open_file, args) if file_format == "csv" else None
            if table is not None:
                return uploader.load_parts(table)
            return uploader.load(_read(path, open_file), file_format)
        except LoadFailed as error:
            return error

    # Only --concurrency files are held in memory at once, however many are given.
    outcomes = gevent.pool.Pool(args.concurrency).map(attempt, args.files)
    loaded: list[Loaded] = []
    for path, outcome in zip(args.files, outcomes, strict=True):
        if isinstance(outcome, LoadFailed):
            print(f"error: {path}: {outcome}", file=sys.stderr)
            if outcome.loaded is None or not outcome.loaded.records:
                continue
            outcome = outcome.loaded
        loaded.append(outcome)
        if several:
            print(f"{path}: loaded {_what(outcome)}")
    if not loaded:
        return FAILED
    try:
        state = request_json("GET", args.url, STATUS_PATH)["msg"]
        size = request_json("GET", args.url, SIZE_PATH)["size"]
    except LoadFailed as error:
        print(f"error: {error}", file=sys.stderr)
        return FAILED
    what = f"{counted(sum(each.records for each in loaded), 'record')} from {counted(len(loaded), 'file')}" \
        if several else _what(loaded[0])
    last_part = f"; {LAST_PART_ONLY}" if any(each.in_parts for each in loaded) else ""
    print(f"loaded {what} (status {state}, size {size}{last_part})")
    if any(each.records < each.of for each in loaded):
        return PARTIAL
    return LOADED if len(loaded) == len(args.files) else SOME_FAILED


def _what(loaded: Loaded) -> str:
    """``3000 records``, or ``1000 of 3000 records, in part``."""
    if loaded.records < loaded.of:
        return f"{loaded.records} of {counted(loaded.of, 'record')}, in part"
    return counted(loaded.records, "record")


def _source(path: str) -> tuple[bytes, Callable[[], IO[bytes]]]:
    """The file's first bytes (all of standard input) and a function that opens it from its start."""
    try:
        if path == STDIN:
            data = sys.stdin.buffer.read()
            return data, lambda: io.BytesIO(data)
        with open(path, "rb") as bulk_file:
            return bulk_file.read(wide_tables.HEAD_BYTES), lambda: open(path, "rb")
    except OSError as error:
        raise LoadFailed(_cannot_read(path, error)) from None


def _read(path: str, open_file: Callable[[], IO[bytes]]) -> bytes:
    try:
        with open_file() as bulk_file:
            return bulk_file.read()
    except OSError as error:
        raise LoadFailed(_cannot_read(path, error)) from None


def _wide_table(path: str, head: bytes, open_file: Callable[[], IO[bytes]],
                args: argparse.Namespace) -> wide_tables.WideFile | None:
    """The file as a wide table (``wide_tables``) if it is one, else None."""
    try:
        found = wide_tables.recognise(head, path, args.country_column, args.indicator_column)
    except BadFile as error:
        raise LoadFailed(f"{error} (nothing was sent)") from None
    return None if found is None else wide_tables.WideFile(open_file, found, head)


def _cannot_read(path: str, error: OSError) -> str:
    return f"cannot read {path}: {error.strerror or error}"


def count_records(body: bytes, file_format: str) -> int:
    """The records of a body the server took: read as the server reads it (a CSV's header, its blank lines
    and byte order mark not counted)."""
    if file_format == "json":
        return len(json.loads(body))
    rows = csv.reader(io.StringIO(body.decode("utf-8-sig"), newline=""))
    return sum(1 for row in rows if row) - 1


def service_url(text: str) -> str:
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise argparse.ArgumentTypeError(f"not an http:// or https:// URL: {text!r}")
    return text.rstrip("/")


def _positive_integer(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    return number


class Upload:
    """One file's load: its POSTs, then its jobs followed until applied, with a progress bar."""

    def __init__(self, args: argparse.Namespace, token: str, label: str = "") -> None:
        self._url = args.url
        self._gzip = args.gzip
        self._max_bytes, self._max_records = args.max_body, DEFAULT_BULK_MAX_RECORDS
        self._deadline = time.monotonic() + args.timeout
        self._timeout = args.timeout
        self._token = token
        self._label = label
        # (job, records) accepted and not yet seen applied
        self._jobs: collections.deque[tuple[int, int]] = collections.deque()
        self._applied = 0
        self._records = 0  # in the file, once known: what the progress bar counts to
        self._in_parts = False  # cut into several POSTs

    def load(self, data: bytes, file_format: str) -> Loaded:
        """Send ``data`` and wait until it is applied: what was loaded."""
        if file_format != "ndjson" and len(data) <= self._max_bytes:
            try:
                job = self._post(data, file_format)
            except Refused as refused:
                if refused.status != http.client.REQUEST_ENTITY_TOO_LARGE:
                    raise
                self._fit(refused, len(data))
            else:  # counted once the server took it: what it refuses is its to say
                self._records = count_records(data, file_format)
                self._jobs.append((job, self._records))
                return self._wait()
        try:
            bulk = BulkFile(data, file_format)
            bulk.check(self._max_bytes, self._max_records)
        except BadFile as error:
            raise LoadFailed(f"{error} (nothing was sent)") from None
        self._records = len(bulk)
        return self._send_parts(bulk)

    def load_parts(self, table: wide_tables.WideFile) -> Loaded:
        """Send a file read as a stream (``wide_tables.WideFile``) in parts, once every record in it is checked,
        and wait until it is applied: what was loaded."""
        try:
            table.check(self._max_bytes, self._max_records)
        except BadFile as error:
            raise LoadFailed(f"{error} (nothing was sent)") from None
        except OSError as error:
            raise LoadFailed(f"cannot read the file: {error.strerror or error}") from None
        self._records = len(table)
        return self._send_parts(table)

    def _send_parts(self, bulk: BulkFile | wide_tables.WideFile) -> Loaded:
        start, sent = 0, False
        while not sent:
            sent = True
            for part in bulk.parts(self._max_bytes, self._max_records, start):
                self._in_parts = self._in_parts or part.records < len(bulk)
                try:
                    self._jobs.append((self._post(part.body, bulk.format), part.records))
                except Refused as refused:
                    if refused.status != http.client.REQUEST_ENTITY_TOO_LARGE or part.records == 1:
                        raise self._stopped(refused, bulk, part.first) from None
                    self._fit(refused, len(part.body), part.records)
                    start, sent = part.first, False
                    break
                except LoadFailed as error:
                    raise self._stopped(error, bulk, part.first) from None
        loaded = self._wait()
        self._describe(bulk.names)
        return loaded

    def _describe(self, names: Descriptions) -> None:
        """PATCH the names a file gave its codes (``core.descriptions``), once its records are loaded."""
        headers = {"Content-Type": "application/merge-patch+json", **self._authorization()}
        for by, described in names.held.items():
            codes = sorted(described)
            for start in range(0, len(codes), DESCRIPTIONS_PER_PATCH):
                patch = {code: described[code] for code in codes[start:start + DESCRIPTIONS_PER_PATCH]}
                try:
                    request_json("PATCH", self._url, DESCRIPTIONS_PATHS[by], json.dumps(patch).encode(), headers)
                except LoadFailed as error:
                    raise LoadFailed(f"the records were loaded, but not the names of their codes: {error}") from None

    def _stopped(self, error: LoadFailed, bulk: BulkFile | wide_tables.WideFile, first: int) -> LoadFailed:
        """The error of a part, saying what the parts before it loaded, and carrying it."""
        if not first:
            return error
        try:
            applied = self._wait()
            loaded = f"the {counted(first, 'record')} before {bulk.place(first)} were loaded"
        except LoadFailed as waiting:
            applied = waiting.loaded or self._loaded()
            loaded = f"the {counted(first, 'record')} before {bulk.place(first)} were accepted ({waiting})"
        stopped = LoadFailed(f"{error}; {loaded}. A bulk load replaces records by key: loading the file again is safe")
        stopped.loaded = applied
        return stopped

    def _fit(self, refused: Refused, size: int, records: int | None = None) -> None:
        """Make the next bodies fit the limit a 413 names, its bytes or records; else (or when that would
        not make the refused body smaller) half the refused body's size and records."""
        limits = self._max_bytes, self._max_records
        named_bytes, named_records = _BYTES_LIMIT.search(refused.message), _RECORDS_LIMIT.search(refused.message)
        if named_bytes and int(named_bytes[1]) < size:
            self._max_bytes = int(named_bytes[1])
        elif named_records and records is not None and int(named_records[1]) < records:
            self._max_records = int(named_records[1])
        elif named_records and records is None:  # the whole file, its records not counted
            self._max_records = min(self._max_records, int(named_records[1]))
        if (self._max_bytes, self._max_records) == limits:
            self._max_bytes = min(self._max_bytes, size // 2)
            if records:
                self._max_records = min(self._max_records, max(1, records // 2))

    def _authorization(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    def _post(self, body: bytes, file_format: str) -> int:
        """POST one body; the job it made. A 503 (a full queue) is tried again after its
        Retry-After, until the deadline."""
        headers = {"Content-Type": CONTENT_TYPES[file_format], **self._authorization()}
        if self._gzip:
            body, headers["Content-Encoding"] = gzip.compress(body, GZIP_LEVEL), "gzip"
        while True:
            try:
                answer = request_json("POST", self._url, BULK_PATH, body, headers)
                break
            except Refused as refused:
                wait = refused.retry_after
                if refused.status != http.client.SERVICE_UNAVAILABLE or wait is None:
                    if self._gzip and refused.status in (http.client.BAD_REQUEST, http.client.UNSUPPORTED_MEDIA_TYPE):
                        raise Refused(f"{refused} (does the server take gzipped bodies? try without --gzip)",
                                      refused.status, refused.message) from None
                    raise
                if time.monotonic() + wait > self._deadline:
                    raise
                time.sleep(wait)
        return int(answer.location.rsplit("/", 1)[1])

    def _wait(self) -> Loaded:
        """Follow the jobs until each is applied, showing their progress against the file's records: what was
        loaded (a LoadFailed carries it too)."""
        bar = ProgressBar(sys.stderr, self._records, self._label)
        try:
            while self._jobs:
                job, records = self._jobs[0]
                status = _job_status(self._url, job)
                if status["msg"] == "complete":
                    self._applied += records
                    self._jobs.popleft()
                    continue
                if status["msg"] == "failed":
                    raise LoadFailed(f"the server gave up applying job {job} ({status['count']} of "
                                     f"{counted(records, 'record')} applied): see its log")
                bar.show(self._applied + status["count"])
                if time.monotonic() > self._deadline:
                    raise LoadFailed(f"the load was accepted but not applied within {self._timeout:g} s "
                                     f"(job {job}: {status['msg']}, {status['count']} of {records} applied)")
                time.sleep(POLL_SECONDS)
            bar.show(self._applied)
        except LoadFailed as error:
            error.loaded = self._loaded()
            raise
        finally:
            bar.end()
        return self._loaded()

    def _loaded(self) -> Loaded:
        return Loaded(self._applied, self._records, self._in_parts)


def _job_status(base_url: str, job: int) -> dict[str, Any]:
    """A job's status document; a job the server no longer keeps (a thousand later jobs) is applied when
    the server has applied as many jobs."""
    try:
        return request_json("GET", base_url, f"{STATUS_PATH}/{job}")
    except Refused as refused:
        if refused.status != http.client.NOT_FOUND:
            raise
    applied = request_json("GET", base_url, STATUS_PATH)["jobs applied"] >= job
    return {"msg": "complete" if applied else "in progress", "count": 0}
