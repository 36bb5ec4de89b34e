"""Log lines in logfmt (``key=value ...``), which log tools parse: one formatter for every logger."""

import collections
import contextvars
import logging
import sys
import time
from collections.abc import Callable, Hashable, Mapping
from typing import Any

_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._:/?&%+,@")


def logfmt_value(value: object) -> str:
    text = str(value)
    if text and all(character in _PLAIN for character in text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# The id of the request being served (X-Request-ID), for the lines logged while serving it; gevent
# gives each greenlet its own context, so each connection's greenlet has its own.
request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)


class RequestIdFilter(logging.Filter):
    """Gives each record the id of the request its greenlet was serving when it was logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


class LogfmtFormatter(logging.Formatter):
    """``time=... level=... logger=...``, the process's ``context`` (``worker=1``), the record's
    ``request_id`` if it has one, then its ``fields`` (an access log line) or ``msg=...``."""

    def __init__(self, context: Mapping[str, object] | None = None) -> None:
        super().__init__()
        self._context = [f"{key}={logfmt_value(value)}" for key, value in (context or {}).items()]

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        parts = [f"time={stamp}.{int(record.msecs):03d}Z", f"level={record.levelname.lower()}",
                 f"logger={record.name}", *self._context]
        served = getattr(record, "request_id", None)
        if served is not None:
            parts.append(f"request_id={logfmt_value(served)}")
        fields = getattr(record, "fields", None)
        if fields is None:
            fields = {"msg": record.getMessage()}
        parts += [f"{key}={logfmt_value(value)}" for key, value in fields.items()]
        if record.exc_info:
            parts.append(f"error={logfmt_value(self.formatException(record.exc_info))}")
        return " ".join(parts)


def configure_logging(context: Mapping[str, object] | None = None) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(LogfmtFormatter(context))
    handler.addFilter(RequestIdFilter())
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)


class ThrottledLog:
    """Log lines, at most ``lines`` per ``window`` seconds: a burst is said up to the limit, then left out
    and counted, and the next line said tells how many were, so that the log neither floods nor goes silent.

    A line whose ``key`` differs from the previous line's (another error) starts a new window, so it is
    said at once; :meth:`reset` does the same for whatever comes next (after a recovery)."""

    def __init__(self, lines: int, window: float, logger: logging.Logger,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._logger = logger
        self._lines = lines
        self._window = window
        self._clock = clock
        self._said: collections.deque[float] = collections.deque()  # when each line of the current window was said
        self._left_out = 0
        self._key: Hashable = None

    def log(self, level: int, message: str, *args: Any, exc_info: bool = False, key: Hashable = None) -> None:
        now = self._clock()
        if key != self._key:
            self._key = key
            self._said.clear()
        while self._said and now - self._said[0] >= self._window:
            self._said.popleft()
        if len(self._said) >= self._lines:
            self._left_out += 1
            return
        self._said.append(now)
        if self._left_out:
            message += " (%d similar lines left out before this one)"
            args += (self._left_out,)
            self._left_out = 0
        self._logger.log(level, message, *args, exc_info=exc_info)

    def reset(self) -> None:
        """Whatever is logged next is said at once."""
        self._said.clear()
        self._key = None


def counted(number: int, noun: str) -> str:
    """``1 record``, ``2 records``: a count as a person writes it."""
    return f"{number} {noun}{'' if number == 1 else 's'}"
