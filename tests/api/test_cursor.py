"""Paging cursors: opaque, URL-safe, and only what this service writes decodes."""

import re

import pytest

from growth_gevent.api.cursor import InvalidCursor, decode_cursor, encode_cursor


@pytest.mark.parametrize("key", [("BRZ", "NGDP_R", 2002), ("CÔTE D’IVOIRE", "\U0001F600", -(10 ** 30)),
                                 ('QUOTE"BACKSLASH\\', "[1,2]", 0)])
def test_a_cursor_is_url_safe_and_names_its_key(key):
    cursor = encode_cursor(key)
    assert re.fullmatch(r"[A-Za-z0-9_-]+", cursor)
    assert decode_cursor(cursor) == key


@pytest.mark.parametrize("cursor", ["", "x", "!!!!", "WzFd", "e30", "bnVsbA", "WyJBIiwiQiIsIjEiXQ",
                                    "WyJBIiwiQiIsdHJ1ZV0", "WyJBIiwiQiIsMSwyXQ", "_w",
                                    "WyJcdWQ4MDAiLCJYIiwxXQ", "WyJYIiwiXHVkZmZmIiwxXQ"])  # a lone surrogate
def test_anything_else_is_invalid(cursor):
    with pytest.raises(InvalidCursor):
        decode_cursor(cursor)


