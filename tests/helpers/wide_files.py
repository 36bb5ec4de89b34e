"""Small files written to the published layouts of the IMF's World Economic Outlook database ("all countries",
``WEOOct2023all.xls``: tab-separated text despite its name, Latin-1, UTF-16 since October 2020) and of the World
Bank's indicator downloads (``API_NY.GDP.MKTP.KD.ZG_DS2_en_csv_v2.csv``: a UTF-8 BOM, a preamble, a trailing comma
on every line); and the records each holds, as the service keeps them."""

WEO_COLUMNS = ("WEO Country Code", "ISO", "WEO Subject Code", "Country", "Subject Descriptor", "Subject Notes",
               "Units", "Scale", "Country/Series-specific Notes", "2020", "2021", "2022", "Estimates Start After")
# (WEO code, ISO, subject, country, descriptor, units, scale, values 2020-2022, estimates after)
WEO_ROWS = (
    ("223", "BRA", "NGDP_R", "Brazil", "Gross domestic product, constant prices", "National currency", "Billions",
     ("1,873.288", "1,964.126", "n/a"), "2021"),
    ("223", "BRA", "NGDP_RPCH", "Brazil", "Gross domestic product, constant prices", "Percent change", "",
     ("-3.277", "4.989", "2.9"), "2021"),
    ("662", "CIV", "NGDP_RPCH", "Côte d'Ivoire", "Gross domestic product, constant prices", "Percent change", "",
     ("0.7", "--", ""), "2020"),
    ("716", "STP", "LUR", "São Tomé and Príncipe", "Unemployment rate", "Percent of total labor force", "",
     ("n/a", "n/a", "n/a"), "n/a"),
)
WEO_SOURCE_LINE = "International Monetary Fund, World Economic Outlook Database, October 2023"
WEO_RECORDS = {
    ("BRA", "NGDP_R", 2020): 1873.288, ("BRA", "NGDP_R", 2021): 1964.126,
    ("BRA", "NGDP_RPCH", 2020): -3.277, ("BRA", "NGDP_RPCH", 2021): 4.989, ("BRA", "NGDP_RPCH", 2022): 2.9,
    ("CIV", "NGDP_RPCH", 2020): 0.7,
}
WEO_COUNTRIES = {"BRA": {"name": "Brazil"}, "CIV": {"name": "Côte d'Ivoire"}, "STP": {"name": "São Tomé and Príncipe"}}
WEO_INDICATORS = {
    "NGDP_R": {"name": "Gross domestic product, constant prices", "units": "National currency",
               "scale": "Billions"},
    "NGDP_RPCH": {"name": "Gross domestic product, constant prices", "units": "Percent change"},
    "LUR": {"name": "Unemployment rate", "units": "Percent of total labor force"},
}


def weo_text() -> str:
    """The WEO file's text: a header, a row per country and subject (notes with tabs quoted, as Excel writes
    them), a blank line and the source line."""
    lines = ["\t".join(WEO_COLUMNS)]
    for code, iso, subject, country, descriptor, units, scale, values, after in WEO_ROWS:
        notes = '"See notes for:\tGross domestic product, constant prices (National currency)."'
        lines.append("\t".join((code, iso, subject, country, descriptor, "Notes on the subject.", units, scale,
                                notes, *values, after)))
    return "\r\n".join([*lines, "", WEO_SOURCE_LINE, ""])


def weo_latin1() -> bytes:
    return weo_text().encode("latin-1")


def weo_utf16() -> bytes:
    return weo_text().encode("utf-16")  # with its byte order mark, as the October 2020 and later files


WORLD_BANK_YEARS = ("1960", "1961", "2022")
WORLD_BANK_ROWS = (
    ("Brazil", "BRA", "GDP growth (annual %)", "NY.GDP.MKTP.KD.ZG", ("", "10.276", "2.9")),
    ("Africa Eastern and Southern", "AFE", "GDP growth (annual %)", "NY.GDP.MKTP.KD.ZG", ("", "", "3.553")),
    ("Aruba", "ABW", "GDP growth (annual %)", "NY.GDP.MKTP.KD.ZG", ("", "", "")),
)
WORLD_BANK_RECORDS = {
    ("BRA", "NY.GDP.MKTP.KD.ZG", 1961): 10.276, ("BRA", "NY.GDP.MKTP.KD.ZG", 2022): 2.9,
    ("AFE", "NY.GDP.MKTP.KD.ZG", 2022): 3.553,
}
WORLD_BANK_COUNTRIES = {"BRA": {"name": "Brazil"}, "AFE": {"name": "Africa Eastern and Southern"},
                        "ABW": {"name": "Aruba"}}
WORLD_BANK_INDICATORS = {"NY.GDP.MKTP.KD.ZG": {"name": "GDP growth (annual %)"}}


def quoted_line(*fields: str, ending: str) -> str:
    """A CSV line of ``fields``, each quoted, as the World Bank writes them, then ``ending``."""
    return ",".join(f'"{field}"' for field in fields) + ending


def world_bank_csv() -> bytes:
    """The World Bank file's bytes: the BOM, the preamble, the header, every field quoted and every line ending
    in a comma."""
    def line(*fields: str) -> str:
        return quoted_line(*fields, ending=",\n")
    text = (line("Data Source", "World Development Indicators") + "\n"
            + line("Last Updated Date", "2023-12-18") + "\n\n"
            + line("Country Name", "Country Code", "Indicator Name", "Indicator Code", *WORLD_BANK_YEARS)
            + "".join(line(name, code, indicator, indicator_code, *values)
                      for name, code, indicator, indicator_code, values in WORLD_BANK_ROWS))
    return ("\ufeff" + text).encode("utf-8")


def databank_csv() -> bytes:
    """A World Bank DataBank extract (``Data_Extract_From_World_Development_Indicators``): the series' name and
    code first, years as ``1961 [YR1961]``, ``..`` for a missing value, two lines on the source at the end."""
    def line(*fields: str) -> str:
        return quoted_line(*fields, ending="\r\n")
    years = [f"{year} [YR{year}]" for year in WORLD_BANK_YEARS]
    rows = "".join(line(indicator, indicator_code, name, code, *(value or ".." for value in values))
                   for name, code, indicator, indicator_code, values in WORLD_BANK_ROWS)
    text = (line("Series Name", "Series Code", "Country Name", "Country Code", *years) + rows + "\r\n\r\n"
            + line("Data from database: World Development Indicators") + line("Last Updated: 12/18/2023"))
    return ("\ufeff" + text).encode("utf-8")
