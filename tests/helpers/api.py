"""What the API's tests in process and against live servers share: URLs, tokens, CSV attacks, strict-JSON
bodies."""

import csv
import io

import webtest

from growth_gevent.api import csv_format
from growth_gevent.api.app import create_app
from growth_gevent.config import Config
from tests.helpers.support import memory_store

TOKEN = "s3cret-token-of-32-characters-xx"
RECORD_URL = "/api/v1/growth/BRZ/NGDP_R/2002"
MISSING = 'Bearer realm="growth"'


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


SERIES_URL = "/api/v1/growth/BRZ/NGDP_R"
ORIGIN = "https://app.example.com"
ATTACKS = ["=SUM(1+1)", "+CMD", "@SUM(A1)", "-2+3"]


def evaluated(body):
    """The cells a spreadsheet would take for a formula, splitting at commas or (some locales) semicolons;
    a number is a number, not a formula."""
    return [cell for separator in ",;" for cell in cells(body, separator)
            if (cell.startswith(TRIGGERS) or cell.lstrip().startswith(TRIGGERS[:4]))  # LibreOffice trims spaces
            and not csv_format._NUMBER.fullmatch(cell)]


JSON_RECORD = {"Country": "A", "Indicator": "B", "Value": 1.5, "Year": 2002}
LONG_DIGITS = "1" * 4301  # one more than Python's int() reads from text
TOO_LONG = "request body has an integer of more than 4300 digits; no field takes one"
UNDERFLOW = ("request body has the number {}, too small for a double: it would be read as 0; send 0, or a "
             "number of at least 5e-324 in size")
YEAR_RANGE = "Year must be between -999999999 and 999999999"


TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def cells(body, separator=","):
    """Every cell of a CSV body as a spreadsheet set to split at ``separator`` reads it."""
    return [cell for row in csv.reader(io.StringIO(body.decode(), newline=""), delimiter=separator) for cell in row]


def records(count, value=1):
    return [{"Country": "A", "Indicator": "B", "Value": value, "Year": year} for year in range(count)]


# Six records over four series of three countries, for the reads and paging of tests/api/.
SERIES = [{"Country": c, "Indicator": i, "Value": v, "Year": y}
          for c, i, v, y in [("BRZ", "NGDP_R", 1.5, 2002), ("BRZ", "NGDP_R", 2.5, 2001), ("BRZ", "NGDP_R", 3, 2010),
                             ("BRZ", "PCPI", 4.0, 2002), ("ALB", "NGDP_R", 5.0, 2002), ("ZWE", "LP", 6.0, 1999)]]


def memory_client(**settings):
    """A client on a fresh in-memory store, and the store, for a Config of ``settings``."""
    store = memory_store(bulk_chunk_records=4, **settings)
    return webtest.TestApp(create_app(store, Config(**settings))), store
