"""A bulk file cut into parts (growth_gevent.cli.bulk_parts): each record's bytes as in the file, parts under
both limits, and the server's messages about a part told in the file's own numbers."""

import json

import pytest

from growth_gevent.cli.bulk_parts import BadFile, BulkFile, format_of

HEADER = b"Country,Indicator,Value,Year\r\n"


def records(count):
    return [{"Country": "A", "Indicator": "B", "Value": index / 4, "Year": 1900 + index} for index in range(count)]


def parts(data, file_format, max_bytes, max_records=1000):
    return list(BulkFile(data, file_format).parts(max_bytes, max_records))


@pytest.mark.parametrize("path, data, file_format", [
    ("a.csv", b"[", "csv"), ("A.NDJSON", b"[", "ndjson"), ("a.jsonl", b"", "ndjson"), ("a.json", b"C", "json"),
    ("-", b"  \n[{}]", "json"), ("-", b'{"a": 1}\n', "ndjson"), ("-", b"Country,Indicator", "csv"),
    ("a.txt", b"\xef\xbb\xbfcountry,x", "csv"), ("-", b"", "csv"),
])
def test_the_format_is_the_names_else_the_first_characters(path, data, file_format):
    assert format_of(path, data) == file_format


def test_json_parts_hold_each_records_bytes_as_in_the_file_under_both_limits():
    data = json.dumps(records(50), indent=4).encode()
    cut = parts(data, "json", 1000, max_records=7)
    assert all(len(part.body) <= 1000 and part.records <= 7 for part in cut)
    assert [record for part in cut for record in json.loads(part.body)] == records(50)
    assert [part.first for part in cut] == [sum(p.records for p in cut[:index]) for index in range(len(cut))]
    assert b'{\n        "Country": "A",' in cut[0].body  # the file's own indentation


def test_a_file_that_fits_is_one_part_and_an_empty_array_one_empty_part():
    assert [part.body for part in parts(b" [1, 2] ", "json", 100)] == [b"[1,2]"]
    assert [(part.body, part.records) for part in parts(b"[ ]", "json", 100)] == [(b"[]", 0)]


def test_csv_parts_repeat_the_header_and_keep_blank_lines_quotes_and_the_last_row():
    data = b'\xef\xbb\xbf' + HEADER + b'A,B,1,1\r\n\r\n"A,""x""",B,2,2\nA,B,3,3'
    cut = parts(data, "csv", 70, max_records=2)
    assert [part.body for part in cut] == [b'\xef\xbb\xbf' + HEADER + b'A,B,1,1\r\n\r\n"A,""x""",B,2,2\n',
                                           b'\xef\xbb\xbf' + HEADER + b"A,B,3,3"]


def test_a_record_alone_over_the_limit_is_refused_before_anything_is_sent():
    with pytest.raises(BadFile, match="^record 1 alone is more than 30 bytes"):
        parts(b'[1, "' + b"x" * 40 + b'"]', "json", 30)


@pytest.mark.parametrize("data, message", [
    (b"[1, 2", "not valid JSON: ',' or ']' expected at char 5"), (b"[1] 2", "extra data after the array"),
    (b'{"a": 1}', "not a JSON array of records"), (b"[1, }", "not valid JSON: Expecting value"),
    (b"[\xff]", "not UTF-8: invalid start byte at byte 1"),
])
def test_json_that_cannot_be_cut_is_refused_saying_why(data, message):
    with pytest.raises(BadFile, match=message):
        BulkFile(data, "json")


@pytest.mark.parametrize("data, file_format, place", [
    (json.dumps(records(30)[:17] + [{"Country": "A"}] + records(30)[18:]).encode(), "json",
     "record 17: Indicator must be a non-empty string"),
    (HEADER + b"A,B,1,1\r\n" * 16 + b"\r\nA,B,x,1\r\n" + b"A,B,1,1\r\n" * 5, "csv", "row 19: Value must be"),
    (b"\n".join(json.dumps(record).encode() for record in records(12)) + b'\n\n{"Country": "A"}\n', "ndjson",
     "line 14: Indicator must be"),
])
def test_a_bad_record_in_any_part_is_named_by_its_place_in_the_file(data, file_format, place):
    with pytest.raises(BadFile) as refused:
        BulkFile(data, file_format).check(200, 5)
    assert str(refused.value).startswith(place), str(refused.value)


def test_a_line_of_ndjson_that_is_not_json_is_named():
    with pytest.raises(BadFile, match="^line 2: not valid JSON"):
        BulkFile(b'{"a": 1}\n{"a": \n', "ndjson")


def test_ndjson_description_lines_are_names_not_records():
    text = ('{"Country":"BRA","name":"Brazil"}\n{"Indicator":"ngdp_r","name":"GDP","units":"Billions"}\n'
            '{"Country":"BRA","Indicator":"NGDP_R","Value":1.5,"Year":2000}\n')
    bulk = BulkFile(text.encode(), "ndjson")
    assert len(bulk) == 1
    assert bulk.names.held == {"country": {"BRA": {"name": "Brazil"}},
                               "indicator": {"NGDP_R": {"name": "GDP", "units": "Billions"}}}


def test_a_bad_description_line_is_named_by_its_line():
    with pytest.raises(BadFile, match="line 2: BRA: unknown field 'units'"):
        BulkFile(b'{"Country":"A","Indicator":"B","Value":1,"Year":1}\n{"Country":"BRA","units":"x"}\n', "ndjson")
