"""CSV for tabular clients: the format itself, the list and series answered as CSV when asked, the bulk
POST read from CSV under the JSON body's limits, and pandas reading a live server as a user would."""

from urllib.parse import quote

import falcon
import pytest
import ujson

from growth_gevent.api import csv_format
from growth_gevent.api.bulk_parser import BulkParser
from growth_gevent.api.csv_format import InvalidCSV, parse_records, rows_at_most, write
from growth_gevent.core.records import InvalidRecord
from tests.helpers.api import ATTACKS, cells, evaluated, memory_client
from tests.helpers.support import load

HEADER = "Country,Indicator,Value,Year\r\n"
CSV_TYPE = "text/csv; charset=utf-8"
# Values whose shortest JSON form differs from a naive float format: exponents, big integers, -0.0.
AWKWARD_VALUES = [183.26, 1e16, 1e-5, 0.1 + 0.2, 10**30, -0.0, 3, 1.7976931348623157e308, 5e-324]


def keyed(records):
    return [((r["Country"], r["Indicator"], r["Year"]), r["Value"]) for r in records]


class TestWrite:
    def test_a_header_then_a_row_per_record_with_crlf(self):
        assert write([(("BRZ", "NGDP_R", 2002), 183.26), (("BRZ", "NGDP_R", 2003), 2)]) == (
            b"Country,Indicator,Value,Year\r\nBRZ,NGDP_R,183.26,2002\r\nBRZ,NGDP_R,2,2003\r\n")

    def test_no_records_is_the_header_alone(self):
        assert write([]) == HEADER.encode()

    def test_names_with_commas_or_quotes_are_quoted_as_rfc_4180_says(self):
        assert write([(('A,B', 'say "hi"', 1), 1.5)]) == (HEADER + '"A,B","say ""hi""",1.5,1\r\n').encode()

    def test_values_are_written_exactly_as_the_json_body_writes_them(self):
        records = [(("A", "B", year), value) for year, value in enumerate(AWKWARD_VALUES)]
        lines = write(records).decode().split("\r\n")[1:-1]
        assert [line.split(",")[2] for line in lines] == [ujson.dumps(value) for value in AWKWARD_VALUES]

    def test_a_page_of_1000_records(self):
        records = [(("A", "B", year), year / 3) for year in range(1000)]
        assert write(records).decode().split("\r\n")[1:] == [f"A,B,{ujson.dumps(year / 3)},{year}"
                                                             for year in range(1000)] + [""]

    def test_utf8_names_round_trip(self):
        records = [(("CÔTE D'IVOIRE", "ÉTÉ\u2028X", 2000), 1.25)]
        assert parse_records(write(records).decode()) == records


class TestParse:
    def test_reads_what_write_writes_with_the_same_types(self):
        records = [(("A", "B", year), value) for year, value in enumerate(AWKWARD_VALUES)]
        parsed = parse_records(write(records).decode())
        assert parsed == records
        assert [type(value) for _, value in parsed] == [type(value) for value in AWKWARD_VALUES]

    def test_upper_cases_names_and_takes_columns_in_any_order_ignoring_extra_ones(self):
        text = "Year,Note,value_x,Value,Indicator,Country\n2002,hi,1,183.26,ngdp_r,brz\n"
        assert parse_records(text) == [(("BRZ", "NGDP_R", 2002), 183.26)]

    @pytest.mark.parametrize("line_break", ["\r\n", "\n", "\r"])
    def test_any_line_break_and_blank_lines_and_a_missing_last_break(self, line_break):
        text = line_break.join(["Country,Indicator,Value,Year", "A,B,1,1", "", "A,B,2,2"])
        assert parse_records(text) == [(("A", "B", 1), 1), (("A", "B", 2), 2)]

    def test_a_byte_order_mark_is_skipped(self):
        assert parse_records("\ufeff" + HEADER + "A,B,1,1\r\n") == [(("A", "B", 1), 1)]

    def test_the_header_alone_is_no_records(self):
        assert parse_records(HEADER) == []

    def test_the_header_names_the_columns_in_any_case_as_the_filters_take_names(self):
        text = "YEAR,country,Indicator,vALUE\n2002,brz,ngdp_r,183.26\n"
        assert parse_records(text) == [(("BRZ", "NGDP_R", 2002), 183.26)]

    @pytest.mark.parametrize("header", ["", "Country,Indicator,Value", "Country,Indicator,Value,Year,year",
                                        "Country,Indicator,Value,Year,Year", "A,B,1,2002"])
    def test_a_header_without_each_column_once_is_refused(self, header):
        with pytest.raises(InvalidRecord) as refused:
            parse_records(header + "\r\nA,B,1,1\r\n")
        assert str(refused.value).startswith("the header row must name each of the columns Country, "
                                             "Indicator, Value, Year once; row 1 is ")

    @pytest.mark.parametrize("row, message", [
        ("A,B,1", "row 3: has 3 fields, the header has 4"),
        ("A,B,1,2002,x", "row 3: has 5 fields, the header has 4"),
        ("A/B,B,1,2002", "row 3: Country must not contain '/'"),
        (",B,1,2002", "row 3: Country must be a non-empty string"),
        ("A,..,1,2002", "row 3: Indicator must not be '.' or '..'"),
        *[(f"A,B,{value},2002", "row 3: Value must be a finite number")
          for value in ["", "nan", "inf", "Infinity", " 1", "1 ", "1_0", "0x10", "1e400", "-" + "9" * 400, "01",
                        "1.", ".5", "+1", "\u0663", "9" * 5000, "true"]],
        *[(f"A,B,1,{year}", "row 3: Year must be an integer")
          for year in ["", "2002.0", "02002", "+5", "1_000", "1e3", " 2002", "\u0663"]],
        *[(f"A,B,1,{year}", "row 3: Year must be between -999999999 and 999999999")
          for year in ["1" * 5000, "1000000000", "-1000000000"]],
        *[(f"A,B,{value},2002", f"row 3: Value {value} is too small for a double: it would be read as 0")
          for value in ["1e-400", "-2.5E-330"]],
    ])
    def test_an_invalid_row_is_named_by_its_row_number(self, row, message):
        with pytest.raises(InvalidRecord) as refused:
            parse_records(HEADER + "A,B,1,1\r\n" + row + "\r\n")
        assert str(refused.value) == message

    def test_row_numbers_count_the_lines_of_the_body(self):
        with pytest.raises(InvalidRecord) as refused:
            parse_records(HEADER + "A,B,1,1\r\n\r\n\r\nA,B,x,1\r\n")
        assert str(refused.value) == "row 5: Value must be a finite number"

    @pytest.mark.parametrize("text, message", [
        (HEADER + 'A,"B,1,1\r\n', "request body is not valid CSV: row 2: unexpected end of data"),
        (HEADER + 'A,"B"x,1,1\r\n', "request body is not valid CSV: row 2: ',' expected after '\"'"),
    ])
    def test_what_a_csv_reader_cannot_split_is_invalid_csv(self, text, message):
        with pytest.raises(InvalidCSV) as refused:
            parse_records(text)
        assert str(refused.value) == message

    def test_pauses_between_slices_of_rows(self):
        pauses = []
        parse_records(HEADER + "A,B,1,1\r\n" * 12_000, pause=lambda: pauses.append(1))
        assert len(pauses) == 2


class TestRowsAtMost:
    @pytest.mark.parametrize("body, rows", [
        ("", 0), ("Country,Indicator,Value,Year", 0), (HEADER, 0),
        (HEADER + "A,B,1,1\r\nA,B,1,2\r\n", 2), (HEADER + "A,B,1,1\r\nA,B,1,2", 2),
        (HEADER.replace("\r\n", "\n") + "A,B,1,1\nA,B,1,2\n", 2),
        (HEADER.replace("\r\n", "\r") + "A,B,1,1\rA,B,1,2\r", 2),
        (HEADER + "A,B,1,1\nA,B,1,2\rA,B,1,3", 3),
    ])
    def test_lines_bound_the_records_however_they_end(self, body, rows):
        assert rows_at_most(body.encode())[0] == rows
        if body:
            assert len(parse_records(body)) == rows

    def test_blank_lines_count_as_rows(self):
        assert rows_at_most((HEADER + "\r\n\r\nA,B,1,1\r\n").encode())[0] == 3

    def test_separators_are_commas_and_line_breaks(self):
        assert rows_at_most(b"a,b,c\r\n,,\n") == (1, 6)


# --- Over HTTP, in-process ------------------------------------------------------------------------

SERIES = [{"Country": c, "Indicator": i, "Value": v, "Year": y}
          for c, i, v, y in [("BRZ", "NGDP_R", 1.5, 2002), ("BRZ", "NGDP_R", 1e16, 2001), ("BRZ", "NGDP_R", 3, 2010),
                             ("A,B", 'Q"T', -0.0, 1999)]]
SERIES_CSV = (HEADER + '"A,B","Q""T",-0.0,1999\r\nBRZ,NGDP_R,1e+16,2001\r\nBRZ,NGDP_R,1.5,2002\r\n'
              "BRZ,NGDP_R,3,2010\r\n").encode()


@pytest.fixture
def loaded(client, store):
    load(client, store, SERIES)
    return client


def post_csv(client, text, status=202, content_type="text/csv"):
    body = text.encode() if isinstance(text, str) else text
    return client.post("/api/v1/growth", body, content_type=content_type, status=status, expect_errors=True)


class TestListAndSeries:
    def test_format_csv_answers_the_page_as_csv(self, loaded):
        response = loaded.get("/api/v1/growth?format=csv")
        assert response.headers["Content-Type"] == CSV_TYPE
        assert response.headers["Vary"] == "Accept"
        assert response.body == SERIES_CSV

    def test_the_csv_page_holds_what_the_json_page_holds(self, loaded):
        items = loaded.get("/api/v1/growth?limit=2&offset=1").json["items"]
        assert loaded.get("/api/v1/growth?limit=2&offset=1&format=csv").body == write(keyed(items))

    def test_a_series_as_csv(self, loaded):
        response = loaded.get("/api/v1/growth/brz/ngdp_r?from=2002&format=csv")
        assert response.headers["Content-Type"] == CSV_TYPE
        assert response.headers["Vary"] == "Accept"
        assert response.body == (HEADER + "BRZ,NGDP_R,1.5,2002\r\nBRZ,NGDP_R,3,2010\r\n").encode()

    @pytest.mark.parametrize("accept", ["text/csv", "text/csv; charset=utf-8", "text/*",
                                        "application/json;q=0.5, text/csv", "text/csv, application/json;q=0.9"])
    def test_an_accept_header_that_prefers_csv_gets_csv(self, loaded, accept):
        for path in ("/api/v1/growth", "/api/v1/growth/BRZ/NGDP_R"):
            response = loaded.get(path, headers={"Accept": accept})
            assert response.headers["Content-Type"] == CSV_TYPE, path

    @pytest.mark.parametrize("accept", [None, "*/*", "application/json", "text/csv;q=0.5, application/json",
                                        "application/json, text/csv", "application/xml", "text/html",
                                        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"])
    def test_any_other_accept_header_gets_json(self, loaded, accept):
        headers = {"Accept": accept} if accept else {}
        for path in ("/api/v1/growth", "/api/v1/growth/BRZ/NGDP_R"):
            response = loaded.get(path, headers=headers)
            assert response.content_type == "application/json", path
            assert response.headers["Vary"] == "Accept"
            response.json  # noqa: B018 (it parses)

    def test_format_wins_over_accept(self, loaded):
        assert loaded.get("/api/v1/growth?format=json", headers={"Accept": "text/csv"}).content_type == \
            "application/json"
        assert loaded.get("/api/v1/growth?format=csv", headers={"Accept": "application/json"}).content_type == \
            "text/csv"

    def test_head_answers_the_csv_headers_without_a_body(self, loaded):
        response = loaded.head("/api/v1/growth?format=csv")
        assert response.headers["Content-Type"] == CSV_TYPE
        assert response.body == b""

    @pytest.mark.parametrize("path, status, message", [
        ("/api/v1/growth?format=xml", 400, "format must be csv or json"),
        ("/api/v1/growth?format=CSV", 400, "format must be csv or json"),
        ("/api/v1/growth?format=csv&format=csv", 400, "query parameter 'format' is given more than once"),
        ("/api/v1/growth?format=csv&limit=0", 400, "limit must be between 1 and 1000"),
        ("/api/v1/growth/BRZ/NGDP_R?format=tsv", 400, "format must be csv or json"),
        ("/api/v1/growth/NOPE/NGDP_R?format=csv", 404, "not found"),
    ])
    def test_errors_stay_json(self, loaded, path, status, message):
        response = loaded.get(path, headers={"Accept": "text/csv"}, status=status)
        assert response.content_type == "application/json"
        assert response.json == {"msg": message}

    def test_a_blank_format_counts_as_not_given(self, loaded):
        assert loaded.get("/api/v1/growth?format=").content_type == "application/json"


class TestBulkPost:
    def test_a_csv_load_stores_what_the_same_json_load_stores(self, client, store):
        assert post_csv(client, SERIES_CSV.decode()).json == {"msg": "In progress"}
        assert store.wait_idle(10)
        assert client.get("/api/v1/growth").json["items"] == sorted(
            SERIES, key=lambda r: (r["Country"], r["Indicator"], r["Year"]))

    def test_content_type_parameters_and_case_are_accepted(self, client):
        post_csv(client, HEADER + "A,B,1,1\r\n", content_type="Text/CSV; charset=utf-8; header=present")

    def test_an_invalid_row_is_422_naming_the_row_and_stores_nothing(self, client, store):
        response = post_csv(client, HEADER + "A,B,1,1\r\nA,B,high,2\r\n", status=422)
        assert response.json == {"msg": "row 3: Value must be a finite number"}
        assert store.wait_idle(10)
        assert store.size() == 0

    @pytest.mark.parametrize("body, message", [
        (b"", "request body is empty"),
        (b" \r\n", "request body is empty"),
        (b"Country,Indicator,Value,Year\r\n\xff", "request body is not UTF-8: invalid start byte at byte 30"),
        (HEADER.encode() + b'"A,B,1,1\r\n', "request body is not valid CSV: row 2: unexpected end of data"),
    ])
    def test_a_body_that_is_not_utf8_csv_is_400(self, client, body, message):
        assert post_csv(client, body, status=400).json == {"msg": message}

    def test_the_header_alone_is_a_job_of_no_records(self, client, store):
        post_csv(client, HEADER)
        assert store.wait_idle(10)
        assert store.bulk_status().jobs_applied == 1


# --- No cell a spreadsheet evaluates (OWASP "CSV injection") ----------------------------------------


class TestFormulas:
    @pytest.mark.parametrize("name, field", [
        ("=SUM(1+1)", "\"'=SUM(1+1)\""), ("+CMD", "\"'+CMD\""), ("@SUM(A1)", "\"'@SUM(A1)\""),
        ("-2+3", "\"'-2+3\""), ("-", "\"'-\""), ("'=X", "\"''=X\""), ("=A,B", "\"'=A,B\""),
        ('=HYPERLINK("X")', '"\'=HYPERLINK(""X"")"'), ("A;=CMD|'/C CALC'!A0", "\"A;'=CMD|'/C CALC'!A0\""),
        ('A;"=1+1', '"A;""\'=1+1"'), ("'A", "'A"), ("A-B", "A-B"), ("A=B", "A=B"),
        (" =1+1", "\"' =1+1\""), ("\u00a0 @X", "\"'\u00a0 @X\""), ("' =X", "\"'' =X\""), ("A; -1", "\"A;' -1\""),
        (" A", " A"),
    ])
    def test_a_name_a_spreadsheet_would_evaluate_is_written_after_an_apostrophe_and_quoted(self, name, field):
        body = write([((name, "NGDP_R", 2000), -2.5)])
        assert body == (HEADER + f"{field},NGDP_R,-2.5,2000\r\n").encode()
        assert evaluated(body) == []

    def test_negative_values_and_years_stay_numbers(self):
        assert write([(("A", "B", -5), -2.5), (("A", "B", -4), -1e-5)]) == (
            HEADER + "A,B,-2.5,-5\r\nA,B,-1e-5,-4\r\n").encode()

    @pytest.mark.parametrize("name", [*ATTACKS, "-", "'=X", "''+Y", "'A", "''", "A;'-B", 'A;"\'=1', "=A;=B", " =1+1",
                                      "' =X", " '=X", "A; -1"])
    def test_what_is_written_reads_back_exactly(self, name):
        records = [((name, name, 2000), -2.5)]
        assert parse_records(write(records).decode()) == records

    @pytest.mark.parametrize("field, name", [
        ("'=SUM(1+1)", "=SUM(1+1)"), ("''=X", "'=X"), ("'A", "'A"), ("''", "''"), ("A;'-B", "A;-B"),
        ("=SUM(1+1)", "=SUM(1+1)"), ("-2+3", "-2+3"), ("' =1+1", " =1+1"), (" '=1", " '=1"),
    ])
    def test_a_bulk_row_reads_an_apostrophe_before_a_formula_as_a_spreadsheet_does(self, field, name):
        assert parse_records(HEADER + f"{field},B,1,1\r\n") == [((name, "B", 1), 1)]

    @pytest.mark.parametrize("way", ["put", "json", "csv"])
    def test_no_way_in_makes_a_csv_answer_a_spreadsheet_evaluates(self, client, store, way):
        names = [name.lower() for name in ATTACKS]
        if way == "put":
            for name in names:
                client.put_json(f"/api/v1/growth/{quote(name, safe='')}/{quote(name, safe='')}/2000",
                                {"value": -2.5}, status=201)
        elif way == "json":
            load(client, store, [{"Country": name, "Indicator": name, "Value": -2.5, "Year": 2000} for name in names])
        else:
            post_csv(client, HEADER + "".join(f"{name},{name},-2.5,2000\r\n" for name in names))
            assert store.wait_idle(10)
        assert store.size() == len(ATTACKS)
        page = client.get("/api/v1/growth?format=csv").body
        series = [client.get(f"/api/v1/growth/{quote(name, safe='')}/{quote(name, safe='')}?format=csv").body
                  for name in names]
        for body in (page, *series):
            assert evaluated(body) == []
        assert cells(page)[4:8] == ["'+CMD", "'+CMD", "-2.5", "2000"]

    def test_a_csv_export_posted_back_stores_exactly_what_was_exported(self, client, store):
        records = [{"Country": name, "Indicator": name, "Value": -2.5, "Year": year}
                   for year, name in enumerate([*ATTACKS, "-", "'=X", "'A", "A;-B"])]
        load(client, store, records)
        before = client.get("/api/v1/growth").json["items"]
        exported = client.get("/api/v1/growth?format=csv").body
        for record in before:
            store.delete((record["Country"], record["Indicator"], record["Year"]))
        post_csv(client, exported)
        assert store.wait_idle(10)
        assert client.get("/api/v1/growth").json["items"] == before
        assert client.get("/api/v1/growth?format=csv").body == exported


class TestBulkLimits:
    """The JSON body's limits, judged for CSV from its line breaks and commas before it is parsed."""

    def test_more_lines_than_a_load_may_hold_is_413_before_parsing(self):
        client, _ = memory_client(bulk_max_records=3)
        response = post_csv(client, HEADER + "A,B,x,1\r\n" * 4, status=413)
        assert response.json == {"msg": "a bulk load holds at most 3 records; this body has 4 lines after its header"}

    def test_as_many_lines_as_a_load_may_hold_is_parsed(self):
        client, _ = memory_client(bulk_max_records=3)
        post_csv(client, HEADER + "A,B,1,1\r\n" * 3)

    def test_more_separators_than_the_records_need_is_413(self):
        client, _ = memory_client(bulk_max_records=3)
        response = post_csv(client, HEADER + "," * 60, status=413)
        assert response.json == {"msg": "request body has 64 CSV separators (commas and line breaks); 3 records "
                                        "need at most 48"}

    def test_a_body_over_the_byte_limit_is_413_with_connection_close(self):
        client, _ = memory_client(max_body_bytes=100)
        response = post_csv(client, HEADER + "A,B,1,1\r\n" * 10, status=413)
        assert response.json == {"msg": "request body is larger than 100 bytes"}
        assert response.headers["Connection"] == "close"

    def test_a_full_queue_is_503_judged_from_the_lines_before_parsing(self):
        client, store = memory_client(bulk_queue_records=10)
        post_csv(client, HEADER + "A,B,1,1\r\n" * 8)
        response = post_csv(client, HEADER + "A,B,not a number,1\r\n" * 8, status=503)
        assert response.json == {"msg": "bulk queue is full: 8 records waiting to be applied and this load holds up "
                                        "to 8 (limit 10); retry later"}
        assert response.headers["Retry-After"] == "1"
        assert store.wait_idle(10)
        post_csv(client, HEADER + "A,B,not a number,1\r\n" * 8, status=422)  # parsed now

    def test_a_csv_parse_waits_for_the_one_parse_slot(self):
        parser = BulkParser(max_records=10, wait_seconds=0.01)
        with parser.slot(), pytest.raises(falcon.HTTPServiceUnavailable):
            parser.parse(HEADER.encode(), lambda records: None, csv_format.MEDIA_TYPE)
