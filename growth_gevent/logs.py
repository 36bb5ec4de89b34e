"""Log lines in logfmt (``key=value ...``), which log tools parse: one formatter for every logger."""

import logging
import sys
import time

_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._:/?&%+,@")


def logfmt_value(value):
    text = str(value)
    if text and all(character in _PLAIN for character in text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class LogfmtFormatter(logging.Formatter):
    """``time=... level=... logger=...``, the process's ``context`` (``worker=1``), then a record's
    ``fields`` (an access log line) or ``msg=...``."""

    def __init__(self, context=None):
        super().__init__()
        self._context = [f"{key}={logfmt_value(value)}" for key, value in (context or {}).items()]

    def format(self, record):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        parts = [f"time={stamp}.{int(record.msecs):03d}Z", f"level={record.levelname.lower()}",
                 f"logger={record.name}", *self._context]
        fields = getattr(record, "fields", None)
        if fields is None:
            fields = {"msg": record.getMessage()}
        parts += [f"{key}={logfmt_value(value)}" for key, value in fields.items()]
        if record.exc_info:
            parts.append(f"error={logfmt_value(self.formatException(record.exc_info))}")
        return " ".join(parts)


def configure_logging(context=None):
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(LogfmtFormatter(context))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
