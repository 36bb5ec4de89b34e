"""The command line's HTTP client: one request, its JSON answer, and the errors a command reports."""

import http.client
import json
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

REQUEST_SECONDS = 60.0
# The bearer token for a server that requires one (GROWTH_API_TOKENS), when --token does not give it: the
# environment is the safer place, since other users of the machine can read arguments in the process list.
TOKEN_VARIABLE = "GROWTH_API_TOKEN"


class Loaded(NamedTuple):
    """What a file's load did: its records applied, of the records in it, and whether it was cut into parts."""

    records: int
    of: int
    in_parts: bool


class LoadFailed(Exception):
    """The load cannot go on; the message says why, in words for the user. ``loaded``: what was loaded before,
    of a file sent in parts, if any."""

    loaded: Loaded | None = None


class Refused(LoadFailed):
    """The server answered an error ``status`` (its ``message``, and its Retry-After in seconds if any)."""

    def __init__(self, text: str, status: int, message: str, retry_after: int | None = None) -> None:
        super().__init__(text)
        self.status, self.message, self.retry_after = status, message, retry_after


class Answer(dict[str, Any]):
    """A JSON answer's document, with the answer's Location header."""

    location = ""


def request_json(method: str, base_url: str, path: str, body: bytes | None = None,
                 headers: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> Answer:
    """The JSON answer to one request; LoadFailed, with the server's message, on anything else (Refused for
    an error answer)."""
    url = base_url + path
    parts = urllib.parse.urlsplit(url)
    connection_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    try:
        connection = connection_type(parts.netloc, timeout=REQUEST_SECONDS)
        connection.connect()
    except (OSError, http.client.HTTPException) as error:
        raise LoadFailed(f"cannot reach the service at {base_url}: {reason(error)}") from None
    try:
        try:
            connection.request(method, parts.path, body, dict(headers))
        except (BrokenPipeError, ConnectionResetError):
            pass  # a body over the service's limit is answered 413 at once and not read: read that answer
        response = connection.getresponse()
        data = response.read()
    except (OSError, http.client.HTTPException) as error:
        raise LoadFailed(f"{method} {url} failed: {reason(error)}") from None
    finally:
        connection.close()
    if not 200 <= response.status < 300:
        raise refusal(f"{method} {url}", response, data)
    if response.status == http.client.NO_CONTENT:
        return Answer()
    document = _parse_json(data)
    if not isinstance(document, dict):
        raise LoadFailed(f"{method} {url} answered with a body that is not a JSON object")
    answer_document = Answer(document)
    answer_document.location = response.getheader("Location") or ""
    return answer_document


def refusal(request: str, response: http.client.HTTPResponse, data: bytes) -> Refused:
    """The Refused of an error answer to ``request`` (``GET URL``), with the server's message."""
    document = _parse_json(data)
    message = document.get("msg") if isinstance(document, dict) else None
    answer = f"{response.status} {response.reason}" + (f": {message}" if message else "")
    if response.status == http.client.UNAUTHORIZED:
        answer += f" (give the token with --token or {TOKEN_VARIABLE})"
    retry_after = response.getheader("Retry-After")
    return Refused(f"{request} answered {answer}", response.status, message or "",
                   int(retry_after) if retry_after and retry_after.isdigit() else None)


def _parse_json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None


def reason(error: BaseException) -> str:
    return getattr(error, "strerror", None) or str(error) or type(error).__name__
