"""The key layout of the Redis store, and the bulk chunks as the apply script reads them.

- ``growth:s:{COUNTRY}/{INDICATOR}``: hash, year -> value as its JSON text, so that it comes back with
  its type and every digit (names cannot hold a ``/``)
- ``growth:i:{COUNTRY}``: sorted set of the country's indicators (all scores 0: ordered by name)
- ``growth:countries``: sorted set of the countries that have records
- ``growth:size``: how many records there are
- ``growth:years``: hash, ``{COUNTRY}/{INDICATOR}`` -> ``"{first} {last}"``, the series' year range, written
  by the facets script when it needs one, dropped by every write that adds or removes a year of the series
- ``growth:tally:country:{COUNTRY}``, ``growth:tally:indicator:{INDICATOR}``: hash, ``records`` -> the
  name's records, and ``{year}`` -> its records of that year; ``growth:tally:country-years:{COUNTRY}``,
  ``growth:tally:indicator-years:{INDICATOR}``: sorted set of the name's years (each scored by itself), so
  its first and last are one ``ZRANGE`` each and removing the last record of either is O(log n): the facet
  tallies, kept by the scripts that create or remove records (``lua/tally.lua``), a name's keys removed with
  its last record. Per name, not per series: what they cost is names x years, whatever the series
- ``growth:indicators``: sorted set of the indicators that have records (all scores 0), kept with their tallies
- ``growth:tally_records``: the records the country tallies count, and ``growth:tally_generation``: the writes
  counted in ``growth:generation`` by a version that keeps the tallies: while the tallies are right, the
  first is ``growth:size`` and the second ``growth:generation`` (the self-check, ``drift()`` in tally.lua)
- ``growth:version``: the layout's version, LAYOUT_VERSION once the tallies are kept; absent in a store
  written by an older version (or emptied, or whose tallies were found wrong), which ``build_tallies.lua``
  brings up to date in steps: ``growth:tally_build``, hash, ``phase`` (``clear``: the old tallies being
  dropped, from the SCAN cursor ``scan``; ``count``), ``country`` and ``indicator`` of the last series it
  read (its cursor), ``why`` the tallies were dropped, and ``growth:tally_build:lock``, the token of the
  worker building them; ``growth:tally_built``, set for REBUILD_PAUSE_SECONDS once a build ends
- ``growth:generation``: a count that every write creating or removing a record increments (a value replaced
  changes no facet): the facets a worker read are still true while it has not changed
- ``growth:jobs``: accepted bulk jobs, oldest first; ``growth:job:{N}``: the chunks of job N not yet
  applied, each a JSON array ``[country, indicator, ["year", "value", ...], ...]``: consecutive records
  of one series are one group, written with one ``HSET``; numbers are JSON strings of their JSON text,
  since Lua's cjson would turn JSON numbers into doubles
- ``growth:remaining``: hash, job N -> its records not yet applied, while it is queued
- ``growth:job_records``: hash, job N -> its records, and ``N:failed`` -> those applied before it was given
  up on, for the last JOBS_KEPT jobs accepted (what the job's own status reports)
- ``growth:new:{COUNTRY}/{INDICATOR}``: hash, year -> the job N that counted that key as new (not stored,
  not counted by an earlier job) when it was accepted, until the key is stored or the job given up on:
  what the record cap holds for the jobs waiting
- ``growth:bulk``: hash, the bulk status: jobs accepted, applied and failed, records applied and
  ``pending`` (accepted, not yet applied: what the queue bound counts), ``new`` (the keys counted in the
  ``growth:new:`` hashes, all together: what the record cap counts besides size), the latest job's counts, the
  failed attempts of the chunk at the head of the queue, and ``initial`` once initial data was queued
- ``growth:dead``: ids of the jobs given up on, oldest first; ``growth:dead:{N}``: job N's chunks not
  applied, the failing one first, kept for inspection; ``growth:dead:errors``: hash, job N -> its error
- ``growth:marker``: a random token, set when absent: its change tells that Redis lost its data
  (see :mod:`.persistence`)

A record is one hash field, a series one hash, a country slice one sorted set and its hashes: no
request walks keys it does not need.
"""

import ujson

from ...core.records import Number, Record

PREFIX = "growth:"
SERIES_PREFIX = PREFIX + "s:"
COUNTRIES = PREFIX + "countries"
SIZE = PREFIX + "size"
YEAR_RANGES = PREFIX + "years"
VERSION = PREFIX + "version"
# The layout this code writes: 2 keeps the facet tallies (absent: 1, before them), 3 also the counts that check
# them (a store of version 2 has its tallies counted again once).
LAYOUT_VERSION = 3
TALLY_RECORDS = PREFIX + "tally_records"
TALLY_GENERATION = PREFIX + "tally_generation"
TALLY_BUILD_LOCK = PREFIX + "tally_build:lock"
# growth:tally_build holds the cursor and lock of the build of an older store's tallies (build_tallies.lua).
GENERATION = PREFIX + "generation"
JOBS = PREFIX + "jobs"
BULK = PREFIX + "bulk"
REMAINING = PREFIX + "remaining"
JOB_RECORDS = PREFIX + "job_records"
DEAD = PREFIX + "dead"
DEAD_ERRORS = DEAD + ":errors"
DATA_MARKER = PREFIX + "marker"
# Fields of one HSET in a bulk chunk: Lua's unpack() takes at most 8,000 values.
MAX_GROUP_FIELDS = 4000


def series_key(country: str, indicator: str) -> str:
    return f"{SERIES_PREFIX}{country}/{indicator}"


def new_keys_key(country: str, indicator: str) -> str:
    return f"{PREFIX}new:{country}/{indicator}"


def record_keys(country: str, indicator: str) -> list[str]:
    """The KEYS of the put and delete scripts."""
    return [series_key(country, indicator), f"{PREFIX}i:{country}", COUNTRIES, SIZE]


def encode_chunk(records: list[Record]) -> str:
    """One bulk chunk as the apply script reads it (see the layout of ``growth:job:{N}`` above)."""
    groups: list[tuple[str, str, list[Number]]] = []
    series = None
    fields: list[Number] = []
    for (country, indicator, year), value in records:
        if (country, indicator) != series or len(fields) == MAX_GROUP_FIELDS:
            series, fields = (country, indicator), []
            groups.append((country, indicator, fields))
        fields += (year, value)
    parts = []
    for country, indicator, fields in groups:
        # ujson writes the numbers' exact text, in C; a number holds no comma, so quoting them is a replace.
        numbers = ujson.dumps(fields)[1:-1].replace(",", '","')
        parts.append(f'{_name_json(country)},{_name_json(indicator)},["{numbers}"]')
    return "[" + ",".join(parts) + "]"


def _name_json(name: str) -> str:
    return ujson.dumps(name, ensure_ascii=False)
