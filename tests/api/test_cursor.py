"""Paging cursors: opaque, URL-safe, and only what this service writes decodes; following a list's "next" from
page to page."""

import re

import pytest

from growth_gevent.api.cursor import InvalidCursor, decode_cursor, encode_cursor
from tests.helpers.api import SERIES
from tests.helpers.support import load


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


def follow(client, url):
    """Every page from ``url`` on, following "next" until it is null."""
    pages = []
    while url is not None:
        pages.append(client.get(url).json)
        url = pages[-1]["next"]
    return pages


class TestCursorPaging:
    def test_following_next_visits_every_record_once_in_order(self, loaded):
        everything = loaded.get("/api/v1/growth").json["items"]
        pages = follow(loaded, "/api/v1/growth?limit=2")
        assert [len(page["items"]) for page in pages] == [2, 2, 2]
        assert [item for page in pages for item in page["items"]] == everything
        assert {(page["total"], page["limit"], page["offset"]) for page in pages} == {(6, 2, 0)}

    def test_next_keeps_the_filters_and_the_limit(self, loaded):
        pages = follow(loaded, "/api/v1/growth?country=brz&from=2002&limit=1")
        assert [(item["Indicator"], item["Year"]) for page in pages for item in page["items"]] == [
            ("NGDP_R", 2002), ("NGDP_R", 2010), ("PCPI", 2002)]
        assert pages[0]["next"].startswith("/api/v1/growth?country=brz&from=2002&limit=1&cursor=")

    def test_a_cursor_with_offset_0_is_fine(self, loaded):
        first = loaded.get("/api/v1/growth?limit=5").json
        assert loaded.get(first["next"] + "&offset=0").json["items"] == [
            {"Country": "ZWE", "Indicator": "LP", "Value": 6.0, "Year": 1999}]

    @pytest.mark.parametrize("query", ["", "limit=6", "limit=1000", "country=ZWE", "offset=5", "country=NOPE"])
    def test_the_last_page_has_no_next(self, client, store, query):
        load(client, store, SERIES)
        assert client.get(f"/api/v1/growth?{query}").json["next"] is None

    def test_a_first_page_with_more_after_it_links_the_next(self, client, store):
        load(client, store, SERIES)
        body = client.get("/api/v1/growth?limit=5&offset=0").json
        assert body["next"] == "/api/v1/growth?limit=5&cursor=WyJCUloiLCJQQ1BJIiwyMDAyXQ"

    def test_the_next_page_is_a_link_header_too_for_csv_which_has_no_room_for_it(self, client, store):
        load(client, store, SERIES)
        response = client.get("/api/v1/growth?limit=5&format=csv")
        every = '</api/v1/growth/export.csv>; rel=collection; type="text/csv"'
        assert response.headers["Link"] == ("</api/v1/growth?limit=5&format=csv&cursor=WyJCUloiLCJQQ1BJIiwyMDAyXQ>; "
                                            f"rel=next, {every}")
        assert client.get("/api/v1/growth?limit=6&format=csv").headers["Link"] == every  # the last page

    def test_an_offset_past_the_bound_is_400_saying_to_follow_next(self, client):
        assert client.get("/api/v1/growth?offset=10000").json["items"] == []
        assert client.get("/api/v1/growth?offset=10001", status=400).json == {
            "msg": 'offset is at most 10000; follow "next" to page further'}

    @pytest.mark.parametrize("cursor", ["x", "!!!!", "WzFd", "e30", "WyJBIiwiQiIsIjIwMDIiXQ", "WyJBIiwiQiIsdHJ1ZV0",
                                        "WyJBIiwiQiIsMS41XQ", "W251bGwsIkIiLDFd", "%FF",
                                        "WyJcdWQ4MDAiLCJYIiwxXQ"])  # ["\ud800","X",1]: a lone surrogate
    def test_a_cursor_that_does_not_decode_is_400(self, client, cursor):
        assert client.get(f"/api/v1/growth?cursor={cursor}", status=400).json == {
            "msg": 'cursor is not one this service gave; pass a page\'s "next" as it is'}

    def test_a_cursor_with_a_non_zero_offset_is_400(self, client):
        assert client.get("/api/v1/growth?cursor=WyJBIiwiQiIsMV0&offset=2", status=400).json == {
            "msg": "cursor and offset cannot be combined: the cursor says where the page starts"}
