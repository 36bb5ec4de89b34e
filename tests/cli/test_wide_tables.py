"""Wide tables as the IMF and the World Bank publish them, read by ``load`` (cli/wide_tables.py)."""

import csv
import io

import pytest

from growth_gevent.cli import wide_tables
from growth_gevent.cli.bulk_parts import BadFile
from tests.helpers import wide_files


def read(data, path="file.csv", country=None, indicator=None, max_bytes=8 << 20, max_records=50_000):
    """The records the table in ``data`` is sent as ((country, indicator, year) -> value), the parts' sizes
    and the table."""
    found = wide_tables.recognise(data[:wide_tables.HEAD_BYTES], path, country, indicator)
    assert found is not None
    table = wide_tables.WideFile(lambda: io.BytesIO(data), found, data[:wide_tables.HEAD_BYTES])
    table.check(max_bytes, max_records)
    records, sizes = {}, []
    for part in table.parts(max_bytes, max_records):
        rows = list(csv.DictReader(io.StringIO(part.body.decode())))
        sizes.append(len(rows))
        records.update({(row["Country"], row["Indicator"], int(row["Year"])): float(row["Value"]) for row in rows})
    return records, sizes, table


@pytest.mark.parametrize("data", [wide_files.weo_latin1(), wide_files.weo_utf16()], ids=["Latin-1", "UTF-16"])
def test_the_weo_file_is_read_as_published_with_its_names(data):
    records, _, table = read(data, "WEOOct2023all.xls")
    assert records == wide_files.WEO_RECORDS
    assert table.names.held["country"] == wide_files.WEO_COUNTRIES
    assert table.names.held["indicator"] == wide_files.WEO_INDICATORS
    assert len(table) == len(wide_files.WEO_RECORDS)


def test_the_world_bank_file_is_read_after_its_preamble_with_its_names():
    records, _, table = read(wide_files.world_bank_csv(), "API_NY.GDP.MKTP.KD.ZG_DS2_en_csv_v2.csv")
    assert records == wide_files.WORLD_BANK_RECORDS
    assert table.names.held["country"] == wide_files.WORLD_BANK_COUNTRIES
    assert table.names.held["indicator"] == wide_files.WORLD_BANK_INDICATORS


def test_a_databank_extract_is_read_with_its_bracketed_years_and_names():
    records, _, table = read(wide_files.databank_csv(), "Data_Extract_From_World_Development_Indicators.csv")
    assert records == wide_files.WORLD_BANK_RECORDS
    assert table.names.held["country"] == wide_files.WORLD_BANK_COUNTRIES
    assert table.names.held["indicator"] == wide_files.WORLD_BANK_INDICATORS


@pytest.mark.parametrize("header, year", [
    ("1960", 1960), ("1960 [YR1960]", 1960), ("1960 [YR1961]", None), ("1960 [yr1960]", None), ("[YR1960]", None),
    ("1960 [YR1960", None), ("Country Code", None)])
def test_a_year_column_is_a_year_or_databanks_form_of_one(header, year):
    assert wide_tables.year_of(header) == year


def test_a_table_is_sent_in_parts_under_the_limits():
    records, sizes, _ = read(wide_files.weo_latin1(), max_records=2)
    assert sizes == [2, 2, 2]
    assert records == wide_files.WEO_RECORDS


def test_any_other_wide_table_is_read_with_its_code_columns_named():
    data = b"geo,series,label,2019,2020\nBRA,gdp,Brazil,1.5,\nARG,gdp,Argentina,,-9.9\n"
    with pytest.raises(BadFile, match=r"layout load does not know \(columns found: geo, series, label, 2019, 2020\)"):
        wide_tables.recognise(data, "table.csv")
    records, _, table = read(data, country="geo", indicator="series")
    assert records == {("BRA", "gdp", 2019): 1.5, ("ARG", "gdp", 2020): -9.9}
    assert table.names.held["country"] == {}


def test_a_column_the_flags_name_must_be_there():
    with pytest.raises(BadFile, match="no column place in the header"):
        wide_tables.recognise(b"geo,series,2019\n", "table.csv", "place", "series")


@pytest.mark.parametrize("data", [b"Country,Indicator,Value,Year\nBRA,X,1,2000\n", b"a,b\n1,2\n", b""])
def test_a_file_of_records_is_not_a_wide_table(data):
    assert wide_tables.recognise(data, "bulk.csv") is None


def test_a_workbook_is_refused_saying_what_to_do():
    with pytest.raises(BadFile, match="an Excel workbook, not text: save it as CSV"):
        wide_tables.recognise(b"PK\x03\x04rest", "WEO.xlsx")


def test_a_bad_value_is_named_by_its_line_and_year_and_nothing_is_kept():
    data = wide_files.weo_latin1().replace(b"4.989", b"4.9x9")
    with pytest.raises(BadFile, match=r"line 3, year 2021: .*Value"):
        read(data)


def test_a_bad_code_is_named_by_its_line():
    data = wide_files.world_bank_csv().replace(b'"AFE"', b'"A/E"')
    with pytest.raises(BadFile, match="line 8: Country Code must not contain '/'"):
        read(data)


def test_a_cell_with_a_comma_that_is_no_thousands_separator_is_not_a_number():
    data = wide_files.weo_latin1().replace(b"4.989", b"4,98")
    with pytest.raises(BadFile, match=r"line 3, year 2021: Value must be a number, not '4,98'"):
        read(data)


def test_a_name_the_api_would_refuse_is_named_by_its_line_before_anything_is_sent():
    # The names go through the same check as an NDJSON file's and a PATCH's, not only the records.
    data = wide_files.weo_latin1().replace(b"Gross domestic product, constant prices\t", b"G" * 301 + b"\t", 1)
    with pytest.raises(BadFile, match=r"line 2: NGDP_R: name must be at most 300 characters"):
        read(data)
