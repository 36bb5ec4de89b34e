import re

import pytest

from growth_gevent.core.records import (
    MAX_NAME_URL_BYTES,
    MAX_REQUEST_LINE,
    YEAR_URL_BYTES,
    InvalidRecord,
    as_record,
    check_name,
    check_year,
    is_finite_number,
    key_to_write,
    make_key,
    parse_records,
    parse_value_update,
)


@pytest.mark.parametrize("value, finite", [
    (0, True), (-3, True), (1.5, True), (1e308, True), (10 ** 30, True),
    (float("nan"), False), (float("inf"), False), (-float("inf"), False), (10 ** 400, False),
    (True, False), ("1", False), (None, False),
])
def test_is_finite_number(value, finite):
    assert is_finite_number(value) is finite


def test_make_key_upper_cases():
    assert make_key("brz", "ngdp_r", 2002) == ("BRZ", "NGDP_R", 2002)


LONG = "ab" * 60  # past what one match vouches for, within what a URL takes


@pytest.mark.parametrize("country, indicator, year", [
    ("brz", "ngdp_r", 2002), ("A-1", "b_2", -999_999_999), ("a.b", "x", 0), (LONG, LONG, 1), ("ä", "x", 1),
    ("..", "x", 1), ("x", ".", 1), ("a\x7f", "x", 1), ("x", "a\ud800", 1), ("x", "", 1), ("x" * 5000, "x", 1),
    ("x", "y", 1_000_000_000), ("x", "y", -1_000_000_000), ("a/b", "x", 1),
])
def test_the_key_to_write_is_make_keys_and_a_name_or_year_no_record_may_have_is_refused_as_checked(
        country, indicator, year):
    problem = check_name("Country", country) or check_name("Indicator", indicator) or check_year(year)
    if problem is None:
        assert key_to_write(country, indicator, year) == make_key(country, indicator, year)
    else:
        with pytest.raises(InvalidRecord, match=re.escape(problem)):
            key_to_write(country, indicator, year)


def test_parse_records_shares_one_string_per_name():
    payload = [{"Country": c, "Indicator": "x", "Value": 1, "Year": 2} for c in ("brz", "BRZ", "Brz")]
    countries = [key[0] for key, _ in parse_records(payload)]
    assert countries == ["BRZ"] * 3
    assert countries[0] is countries[1] is countries[2]


def test_parse_records_keeps_payload_order():
    payload = [{"Country": "b", "Indicator": "x", "Value": 1, "Year": 2},
               {"Country": "a", "Indicator": "y", "Value": 2.5, "Year": 1}]
    assert parse_records(payload) == [(("B", "X", 2), 1), (("A", "Y", 1), 2.5)]


def test_parse_records_names_the_first_bad_record():
    good = {"Country": "a", "Indicator": "y", "Value": 2.5, "Year": 1}
    with pytest.raises(InvalidRecord, match=r"^record 2: Year must be an integer$"):
        parse_records([good, good, {**good, "Year": "1"}, {**good, "Value": None}])


_GOOD = {"Country": "a", "Indicator": "y", "Value": 2.5, "Year": 1}


@pytest.mark.parametrize("bad, message", [
    ({"Country": "a", "Indicator": "y", "Value": 2.5}, "Year must be an integer"),  # its names known already
    ({"Country": "a", "Indicator": "y", "Year": 1}, "Value must be a finite number"),
    ({**_GOOD, "Year": True}, "Year must be an integer"), ({**_GOOD, "Year": 1.0}, "Year must be an integer"),
    ({**_GOOD, "Value": False}, "Value must be a finite number"), ({**_GOOD, "Country": ["a"]}, "Country must be"),
    ({**_GOOD, "Country": 5}, "Country must be"), ({"Indicator": "y", "Value": 1, "Year": 1}, "Country must be"),
    (["a", "y", 2.5, 1], "must be an object"), ("a", "must be an object"), (None, "must be an object"),
])
def test_a_bad_record_after_good_ones_is_named_whatever_it_lacks(bad, message):
    with pytest.raises(InvalidRecord, match=rf"^record 1: {message}"):
        parse_records([_GOOD, bad, _GOOD])


def test_parse_value_update_takes_value_in_either_case_or_the_record_of_the_key():
    key = ("BRZ", "NGDP_R", 2002)
    assert parse_value_update({"value": 3}, key) == 3
    assert parse_value_update({"Value": 3.5}, key) == 3.5
    assert parse_value_update({"Country": "brz", "Indicator": "NGDP_r", "Value": 4, "Year": 2002, "Note": 1}, key) == 4
    for refused in ({"value": 1, "Value": 1}, {"VALUE": 1}, {"Value": True}, {"Value": 1, "Year": 2002.0},
                    {"Value": 1, "Country": None}, {"Value": 1, "Indicator": "NGDP"}):
        with pytest.raises(InvalidRecord):
            parse_value_update(refused, key)


def test_as_record_is_the_challenge_shape():
    assert as_record(("BRZ", "NGDP_R", 2002), 183.26) == {
        "Country": "BRZ", "Indicator": "NGDP_R", "Value": 183.26, "Year": 2002}


def test_parse_records_pauses_between_slices_and_still_names_the_global_index():
    from growth_gevent.core.records import PAUSE_EVERY
    good = {"Country": "a", "Indicator": "y", "Value": 2.5, "Year": 1}
    pauses = []
    assert len(parse_records([good] * (2 * PAUSE_EVERY + 1), pause=lambda: pauses.append(1))) == 2 * PAUSE_EVERY + 1
    assert len(pauses) == 2
    with pytest.raises(InvalidRecord, match=rf"^record {PAUSE_EVERY + 3}: "):
        parse_records([good] * (PAUSE_EVERY + 3) + [{}], pause=lambda: None)


def test_names_may_be_any_valid_unicode_text_but_not_undecodable():
    assert check_name("Country", "ÅLAND") is None
    assert check_name("Country", "A\ud800") == "Country must be valid UTF-8 text"
    assert check_name("Country", "A\ufffd") == "Country must be valid UTF-8 text"


TOO_LONG = f"Country must be at most {MAX_NAME_URL_BYTES} bytes long once upper-cased and percent-encoded in a URL"


@pytest.mark.parametrize("name, problem", [
    (".", "Country must not be '.' or '..'"),
    ("..", "Country must not be '.' or '..'"),
    ("A\tB", "Country must not contain control characters"),
    ("NUL\x00", "Country must not contain control characters"),
    ("DEL\x7f", "Country must not contain control characters"),
    ("C1\x85", "Country must not contain control characters"),
    ("A" * (MAX_NAME_URL_BYTES + 1), TOO_LONG),
    # Each é is 2 UTF-8 bytes, 6 characters percent-encoded.
    ("é" * (MAX_NAME_URL_BYTES // 6 + 1), TOO_LONG),
    # 'ΐ' is 6 bytes encoded, 2,820 for 470, but stored upper-cased, 'Ϊ́', three characters of 18: 8,460.
    ("ΐ" * 470, TOO_LONG),
])
def test_names_that_cannot_name_a_record_in_a_url_are_refused(name, problem):
    assert check_name("Country", name) == problem


@pytest.mark.parametrize("name", ["...", ".A", "A.", "UNITED STATES", "CÔTE D’IVOIRE", "\U0001F600",
                                  "A" * MAX_NAME_URL_BYTES, "é" * (MAX_NAME_URL_BYTES // 6)])
def test_names_a_url_can_carry_are_accepted(name):
    assert check_name("Country", name) is None


def test_a_record_with_two_longest_names_and_a_long_year_fits_in_a_request_line():
    from urllib.parse import quote
    name = "A" * MAX_NAME_URL_BYTES
    line = f"DELETE /api/v1/growth/{quote(name)}/{quote(name)}/{'-' + '9' * (YEAR_URL_BYTES - 1)} HTTP/1.1\r\n"
    assert len(line) == MAX_REQUEST_LINE - 1  # the head parser answers 414 from MAX_REQUEST_LINE on
