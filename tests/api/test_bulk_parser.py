"""The bulk parser (growth_gevent/api/bulk_parser.py), in-process: one body parsed at a time, the bounds a body
meets before it is parsed (the queue's room, the records one POST may hold, the JSON separators its records
could need)."""

import falcon
import gevent
import pytest

from growth_gevent.api.bulk_parser import SEPARATORS_PER_RECORD, BulkParser
from growth_gevent.core.records import InvalidRecord
from tests.helpers.api import memory_client, records
from tests.helpers.support import load, post_records


class TestBulkBounds:
    def test_a_full_queue_is_503_with_retry_after_and_nothing_queued(self):
        client, store = memory_client(bulk_queue_records=10)
        post_records(client, records(8))  # nothing yields in between: still queued
        response = post_records(client, records(8, value=2), status=503)
        assert response.json == {"msg": "bulk queue is full: 8 records waiting to be applied and this load holds up "
                                        "to 8 (limit 10); retry later"}
        assert response.headers["Retry-After"] == "1"
        assert store.bulk_status().jobs_accepted == 1
        assert store.wait_idle(10)
        post_records(client, records(8, value=3))

    def test_a_post_to_a_full_queue_is_503_before_it_is_parsed(self):
        client, store = memory_client(bulk_queue_records=10)
        post_records(client, records(8))
        not_json = b"[" + b",".join([b'{"Country":"A","Indicator":"B","Value":01,"Year":1}'] * 3) + b"]"
        response = client.post("/api/v1/growth", not_json, content_type="application/json", status=503)
        assert response.json == {"msg": "bulk queue is full: 8 records waiting to be applied and this load holds up "
                                        "to 3 (limit 10); retry later"}
        assert store.wait_idle(10)
        client.post("/api/v1/growth", not_json, content_type="application/json", status=400)  # parsed now

    def test_before_parsing_every_brace_counts_as_a_record_even_inside_a_string(self):
        client, store = memory_client(bulk_queue_records=10)
        post_records(client, records(8))
        braced = [{"Country": "{A}", "Indicator": "B", "Value": 1, "Year": year} for year in range(2)]
        response = post_records(client, braced, status=503)  # 8 + 2 would fit; 8 + 4 braces do not
        assert response.json["msg"].startswith("bulk queue is full: 8 records waiting to be applied and this load "
                                               "holds up to 4 (limit 10)")
        assert store.wait_idle(10)
        post_records(client, braced)

    def test_more_records_than_one_post_may_hold_is_413_before_parsing(self):
        client, store = memory_client(bulk_max_records=3)
        post_records(client, records(3))
        response = post_records(client, records(4), status=413)
        assert response.json == {"msg": "a bulk load holds at most 3 records; this body has 4 JSON objects"}
        assert store.bulk_status().jobs_accepted == 1

    def test_a_post_larger_than_the_whole_queue_is_413_not_retry_later(self):
        client, _ = memory_client(bulk_queue_records=5, bulk_max_records=100)
        response = post_records(client, records(6), status=413)
        assert response.json == {"msg": "a bulk load holds at most 5 records; this body has 6 JSON objects"}

    @pytest.mark.parametrize("body", [
        b"[" + b"[]," * 50 + b"[]]", b"[" + b"1," * 50 + b"1]",
        b'[{"Country":"A","Indicator":"B","Value":1,"Year":1,' + b'"x":1,' * 40 + b'"y":1}]'])
    def test_a_body_with_more_json_values_than_its_records_could_need_is_413_before_parsing(self, body):
        client, _ = memory_client(bulk_max_records=3)
        response = client.post("/api/v1/growth", body, content_type="application/json", status=413)
        separators = sum(body.count(byte) for byte in (b",", b":", b"{", b"["))
        assert response.json == {"msg": f"request body has {separators} JSON separators; 3 records need at most "
                                        f"{3 * SEPARATORS_PER_RECORD}"}

    def test_records_with_a_few_extra_fields_are_within_the_separator_bound(self):
        client, store = memory_client(bulk_max_records=3)
        load(client, store, [{**record, "Note": "x, y: z", "Source": "IMF"} for record in records(3)])
        assert store.size() == 3


def room_for_all(records):
    """A check_room that refuses nothing."""


class TestBulkParser:
    def test_room_is_checked_once_it_is_the_bodys_turn_with_its_object_count(self):
        parser = BulkParser(max_records=10)
        asked = []
        with parser.slot():
            waiting = gevent.spawn(parser.parse, b'[{"a": {}}, {}]', asked.append)
            gevent.idle()
            assert asked == []  # the queue may fill while it waits: asked only once the slot is its own
        with pytest.raises(InvalidRecord):
            waiting.get(timeout=5)
        assert asked == [3]

    def test_a_parse_waits_for_the_one_in_progress_then_runs(self):
        parser = BulkParser(max_records=10)
        with parser.slot():
            waiting = gevent.spawn(parser.parse, b"[]", room_for_all)
            gevent.idle()  # it is waiting for the slot now
            assert not waiting.ready()
        assert waiting.get(timeout=5) == []

    def test_a_parse_that_waits_too_long_is_503_with_retry_after(self):
        parser = BulkParser(max_records=10, wait_seconds=0.01)
        with parser.slot():
            with pytest.raises(falcon.HTTPServiceUnavailable) as refused:
                parser.parse(b"[]", room_for_all)
        assert refused.value.description == "too many bulk loads waiting to be parsed; retry later"
        assert refused.value.headers["Retry-After"] == "1"
        assert parser.parse(b"[]", room_for_all) == []  # the slot was given back

    def test_the_slot_is_given_back_when_a_parse_fails(self):
        parser = BulkParser(max_records=10, wait_seconds=0.01)
        with pytest.raises(falcon.HTTPBadRequest):
            parser.parse(b"[01]", room_for_all)
        with pytest.raises(InvalidRecord):
            parser.parse(b"[1]", room_for_all)
        assert parser.parse(b"[]", room_for_all) == []
