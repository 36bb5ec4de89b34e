"""``growth-gevent load FILE...``: upload bulk files, several at once, follow each until it is applied, print
the counts.

Each file is uploaded by a greenlet running plain blocking client code (http.client, time.sleep), written
as straight-line code: the command runs under gevent's monkey.patch_all (``__main__``), so the sockets and
sleeps of ``--concurrency`` uploads wait together instead of one after another.
"""

import argparse
import csv
import http.client
import io
import json
import os
import sys
import time
import urllib.parse

import gevent.pool

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 300.0
DEFAULT_CONCURRENCY = 4
BULK_PATH = "/api/v1/growth"
STATUS_PATH = "/api/v1/growth/post/status"
SIZE_PATH = "/api/v1/growth/size"
POLL_SECONDS = 0.05
REQUEST_SECONDS = 60.0
BAR_WIDTH = 30
PLAIN_STEPS = 4  # without a terminal the bar is one line per quarter of the load, not one per poll
# The bearer token for a server that requires one (GROWTH_API_TOKENS), when --token does not give it: the
# environment is the safer place, since other users of the machine can read arguments in the process list.
TOKEN_VARIABLE = "GROWTH_API_TOKEN"
CONTENT_TYPES = {"json": "application/json", "csv": "text/csv"}
# The exit codes (docs/operations.md, Loading files).
LOADED, FAILED, UNREADABLE, SOME_FAILED = 0, 1, 2, 3


class LoadFailed(Exception):
    """The load cannot go on; the message says why, in words for the user."""


def add_arguments(parser):
    """The ``load`` command's arguments, on the command line's ``load`` parser."""
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="a JSON array of Country/Indicator/Value/Year records, or a CSV file of them")
    parser.add_argument("--url", type=_base_url, default=DEFAULT_URL,
                        help=f"the service's base URL (default: {DEFAULT_URL})")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"seconds to wait for each load to be applied (default: {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--format", choices=CONTENT_TYPES,
                        help="send every FILE as this (default: csv for a name ending in .csv, else json)")
    parser.add_argument("--token", help=f"the bearer token, for a server that requires one (default: "
                                        f"${TOKEN_VARIABLE}, which other users cannot read in the process list)")
    parser.add_argument("--concurrency", type=_positive_integer, default=DEFAULT_CONCURRENCY, metavar="N",
                        help=f"files uploaded at once (default: {DEFAULT_CONCURRENCY})")


def run(args):
    """Upload ``args.files`` to ``args.url``, ``args.concurrency`` at once; the exit code: 0 every file
    loaded, 1 none, 3 some (stderr names the others), 2 a file unreadable (nothing sent) or a usage error."""
    for path in args.files:
        try:
            open(path, "rb").close()  # only opened: each file is read when its upload starts (_read)
        except OSError as error:
            print(f"error: {_cannot_read(path, error)}", file=sys.stderr)
            return UNREADABLE
    token = args.token or os.environ.get(TOKEN_VARIABLE, "").strip()
    several = len(args.files) > 1

    def attempt(path):
        try:
            return load(args.url, _read(path), args.format or format_of(path), token, args.timeout,
                        label=path if several else "")
        except LoadFailed as error:
            return error

    # Only --concurrency files are held in memory at once, however many are given.
    outcomes = gevent.pool.Pool(args.concurrency).map(attempt, args.files)
    loaded = [(path, outcome) for path, outcome in zip(args.files, outcomes, strict=True)
              if not isinstance(outcome, LoadFailed)]
    for path, outcome in zip(args.files, outcomes, strict=True):
        if isinstance(outcome, LoadFailed):
            print(f"error: {path}: {outcome}", file=sys.stderr)
        elif several:
            print(f"{path}: loaded {outcome} records")
    if not loaded:
        return FAILED
    try:
        state, size = _request("GET", args.url, STATUS_PATH)["msg"], _request("GET", args.url, SIZE_PATH)["size"]
    except LoadFailed as error:
        print(f"error: {error}", file=sys.stderr)
        return FAILED
    records = sum(count for _, count in loaded)
    print(f"loaded {records} records" + (f" from {len(loaded)} files" if several else "")
          + f" (status {state}, size {size})")
    return LOADED if len(loaded) == len(args.files) else SOME_FAILED


def _read(path):
    try:
        with open(path, "rb") as bulk_file:
            return bulk_file.read()
    except OSError as error:
        raise LoadFailed(_cannot_read(path, error)) from None


def _cannot_read(path, error):
    return f"cannot read {path}: {error.strerror or error}"


def format_of(path):
    """How a file is sent unless --format says: by its extension, as pandas' to_csv() names it."""
    return "csv" if path.lower().endswith(".csv") else "json"


def count_records(body, file_format):
    """The records of a body the server took: read as the server reads it (a CSV's header, its blank lines
    and byte order mark not counted)."""
    if file_format == "json":
        return len(json.loads(body))
    rows = csv.reader(io.StringIO(body.decode("utf-8-sig"), newline=""))
    return sum(1 for row in rows if row) - 1


def _base_url(text):
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise argparse.ArgumentTypeError(f"not an http:// or https:// URL: {text!r}")
    return text.rstrip("/")


def _positive_integer(text):
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    return number


def load(base_url, body, file_format, token, timeout, label=""):
    """POST ``body`` and wait until its job is applied, showing its progress; return the records in it."""
    headers = {"Content-Type": CONTENT_TYPES[file_format]}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    _request("POST", base_url, BULK_PATH, body, headers)
    records = count_records(body, file_format)
    status = _request("GET", base_url, STATUS_PATH)
    # The POST does not answer with its job number; the latest accepted job, read right after, is ours
    # or a later one (another client's, or another file's of this command), and "jobs applied" reaching it
    # means ours is applied too.
    job = status["jobs accepted"]
    bar = ProgressBar(sys.stderr, records, label)
    deadline = time.monotonic() + timeout
    try:
        while status["jobs applied"] < job:
            # count/total describe the latest accepted job: ours while it is that job and of our size.
            if status["jobs accepted"] == job and status["total"] == records:
                bar.show(status["count"])
            if time.monotonic() > deadline:
                raise LoadFailed(f"the load was accepted but not applied within {timeout:g} s "
                                 f"(status {status['msg']}, job {job}, {status['jobs applied']} applied)")
            time.sleep(POLL_SECONDS)
            status = _request("GET", base_url, STATUS_PATH)
        bar.show(records)
    finally:
        bar.end()
    return records


def _request(method, base_url, path, body=None, headers=()):
    """The JSON answer to one request; LoadFailed, with the server's message, on anything else."""
    url = base_url + path
    parts = urllib.parse.urlsplit(url)
    connection_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    try:
        connection = connection_type(parts.netloc, timeout=REQUEST_SECONDS)
        connection.connect()
    except (OSError, http.client.HTTPException) as error:
        raise LoadFailed(f"cannot reach the service at {base_url}: {_reason(error)}") from None
    try:
        try:
            connection.request(method, parts.path, body, dict(headers))
        except (BrokenPipeError, ConnectionResetError):
            pass  # a body over the service's limit is answered 413 at once and not read: read that answer
        response = connection.getresponse()
        data = response.read()
    except (OSError, http.client.HTTPException) as error:
        raise LoadFailed(f"{method} {url} failed: {_reason(error)}") from None
    finally:
        connection.close()
    document = _parse_json(data)
    if not 200 <= response.status < 300:
        message = document.get("msg") if isinstance(document, dict) else None
        answer = f"{response.status} {response.reason}" + (f": {message}" if message else "")
        if response.status == http.client.UNAUTHORIZED:
            answer += f" (give the token with --token or {TOKEN_VARIABLE})"
        raise LoadFailed(f"{method} {url} answered {answer}")
    if document is None:
        raise LoadFailed(f"{method} {url} answered with a body that is not JSON")
    return document


def _parse_json(data):
    try:
        return json.loads(data)
    except ValueError:
        return None


def _reason(error):
    return getattr(error, "strerror", None) or str(error) or type(error).__name__


class ProgressBar:
    """``[#####.....] 2100/4245 records`` on ``stream``, after the label if any: redrawn in place on a terminal,
    else a few lines."""

    def __init__(self, stream, total, label=""):
        self._stream = stream
        self._total = total
        self._prefix = f"{label}: " if label else ""
        # Several files' bars share the stream: labelled lines then, not one line redrawn in place.
        self._in_place = stream.isatty() and not label
        self._last_mark = None

    def show(self, done):
        fraction = done / self._total if self._total else 1.0
        mark = done if self._in_place else int(fraction * PLAIN_STEPS)
        if mark == self._last_mark:
            return
        self._last_mark = mark
        filled = int(fraction * BAR_WIDTH)
        line = f"{self._prefix}[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{self._total} records"
        self._stream.write(f"\r{line}" if self._in_place else f"{line}\n")
        self._stream.flush()

    def end(self):
        """Leave the terminal's cursor on a fresh line after a bar drawn in place."""
        if self._in_place and self._last_mark is not None:
            self._stream.write("\n")
            self._stream.flush()
