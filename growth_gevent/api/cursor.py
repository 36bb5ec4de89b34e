"""Paging cursors: where the next page of a list starts, as an opaque URL-safe token.

A cursor is the base64url (unpadded) of the JSON ``[country, indicator, year]`` of the last record of a
page; the store starts the next page strictly after that key, at the cost of a first page however deep.
"""

import base64
import binascii
import json

from ..core.records import has_surrogates

_decode = json.JSONDecoder().decode


class InvalidCursor(ValueError):
    """A cursor that this service cannot have written."""


def encode_cursor(key: tuple[str, str, int]) -> str:
    text = json.dumps(list(key), ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode("ascii")


def decode_cursor(cursor: str) -> tuple[str, str, int]:
    """The key a cursor names; InvalidCursor when it is not a cursor."""
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        key = _decode(raw.decode())
    except (binascii.Error, UnicodeError, ValueError, RecursionError):
        raise InvalidCursor(cursor) from None
    if (type(key) is not list or len(key) != 3 or type(key[0]) is not str or type(key[1]) is not str
            or type(key[2]) is not int or has_surrogates(key[0]) or has_surrogates(key[1])):
        raise InvalidCursor(cursor)
    return key[0], key[1], key[2]
