"""``growth-gevent load FILE``: upload a bulk file, follow it until applied, print the count."""

import argparse
import http.client
import json
import os
import sys
import time
import urllib.parse

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 300.0
BULK_PATH = "/api/v1/growth"
STATUS_PATH = "/api/v1/growth/post/status"
SIZE_PATH = "/api/v1/growth/size"
POLL_SECONDS = 0.05
REQUEST_SECONDS = 60.0
BAR_WIDTH = 30
PLAIN_STEPS = 4  # without a terminal the bar is one line per quarter of the load, not one per poll
# The bearer token for a server that requires one (GROWTH_API_TOKENS): from the environment, never
# an argument, which other users of the machine could read in the process list.
TOKEN_VARIABLE = "GROWTH_API_TOKEN"


class LoadFailed(Exception):
    """The load cannot go on; the message says why, in words for the user."""


def add_arguments(parser):
    """The ``load`` command's arguments, on the command line's ``load`` parser."""
    parser.add_argument("file", metavar="FILE", help="a JSON array of Country/Indicator/Value/Year records")
    parser.add_argument("--url", type=_base_url, default=DEFAULT_URL,
                        help=f"the service's base URL (default: {DEFAULT_URL})")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"seconds to wait for the load to be applied (default: {DEFAULT_TIMEOUT:g})")


def run(args):
    """Upload ``args.file`` to ``args.url``; the exit code: 0 loaded, 1 refused or failed, 2 unreadable."""
    try:
        with open(args.file, "rb") as bulk_file:
            body = bulk_file.read()
    except OSError as error:
        print(f"error: cannot read {args.file}: {error.strerror or error}", file=sys.stderr)
        return 2
    try:
        total, state, size = load(args.url, body, args.timeout)
    except LoadFailed as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"loaded {total} records (status {state}, size {size})")
    return 0


def _base_url(text):
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise argparse.ArgumentTypeError(f"not an http:// or https:// URL: {text!r}")
    return text.rstrip("/")


def load(base_url, body, timeout):
    """POST ``body`` and wait until its job is applied; return (records in it, final state, store size)."""
    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    _request("POST", base_url, BULK_PATH, body, {"Authorization": f"Bearer {token}"} if token else {})
    status = _request("GET", base_url, STATUS_PATH)
    # The POST does not answer with its job number; the latest accepted job, read right after, is ours
    # or a later one, and "jobs applied" reaching it means ours is applied too.
    job, total = status["jobs accepted"], status["total"]
    bar = ProgressBar(sys.stderr, total)
    deadline = time.monotonic() + timeout
    try:
        while status["jobs applied"] < job:
            # count/total describe the latest accepted job: ours until another client posts again.
            if status["jobs accepted"] == job:
                bar.show(status["count"])
            if time.monotonic() > deadline:
                raise LoadFailed(f"the load was accepted but not applied within {timeout:g} s "
                                 f"(status {status['msg']}, job {job}, {status['jobs applied']} applied)")
            time.sleep(POLL_SECONDS)
            status = _request("GET", base_url, STATUS_PATH)
        bar.show(total)
    finally:
        bar.end()
    return total, status["msg"], _request("GET", base_url, SIZE_PATH)["size"]


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
            if body is not None:
                headers = {**headers, "Content-Type": "application/json"}
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
    """``[#####.....] 2100/4245 records`` on ``stream``: redrawn in place on a terminal, else a few lines."""

    def __init__(self, stream, total):
        self._stream = stream
        self._total = total
        self._in_place = stream.isatty()
        self._last_mark = None

    def show(self, done):
        fraction = done / self._total if self._total else 1.0
        mark = done if self._in_place else int(fraction * PLAIN_STEPS)
        if mark == self._last_mark:
            return
        self._last_mark = mark
        filled = int(fraction * BAR_WIDTH)
        line = f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{self._total} records"
        self._stream.write(f"\r{line}" if self._in_place else f"{line}\n")
        self._stream.flush()

    def end(self):
        """Leave the terminal's cursor on a fresh line after a bar drawn in place."""
        if self._in_place and self._last_mark is not None:
            self._stream.write("\n")
            self._stream.flush()
