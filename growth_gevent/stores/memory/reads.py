"""Reading the in-memory store's nested dicts in paging order: a page of a list query and a batch of an
export. Paging order, which stores/redis/lua/records.lua keeps too: country, indicator (code point order,
the same as Redis's byte order of their UTF-8), then year as a number."""

import bisect
from collections.abc import Callable

from ...core.loop import let_io_run
from ...core.records import Key, Number, Record
from ..base import EXPORT_BATCH_RECORDS

Series = dict[int, Number]  # year -> value
Indicators = dict[str, Series]  # indicator -> its series
# What a lookup of an absent country or series finds; never written to.
NO_INDICATORS: Indicators = {}
NO_SERIES: Series = {}
# Series a list query examines between two yields to the event loop (a few ms of work; figures in
# docs/performance.md#facets-and-range-lists-beside-other-clients).
SERIES_PER_SLICE = 2000


def page_of(countries: dict[str, Indicators], sorted_countries: Callable[[], list[str]], country: str | None,
            indicator: str | None, first: int | None, last: int | None, offset: int, limit: int,
            after: Key | None) -> tuple[int, list[Record]]:
    """``(total, page)`` of a list query; ``sorted_countries()``: every country, sorted. It yields between
    slices of series, so it may show a write made while it ran."""
    total = 0
    page: list[Record] = []
    # Paging order, which stores/redis/lua/records.lua keeps too: country, indicator (code point order, the
    # same as Redis's byte order of their UTF-8), then year as a number. ``skip`` counts the records
    # still to pass over, from ``after`` when given: series before it are counted, not read.
    skip = offset
    after_series = None if after is None else after[:2]
    examined = 0
    for country_name in sorted_countries() if country is None else [country]:
        indicators = countries.get(country_name, NO_INDICATORS)
        for indicator_name in sorted(indicators) if indicator is None else [indicator]:
            examined += 1
            if examined % SERIES_PER_SLICE == 0:
                let_io_run()
            series = indicators.get(indicator_name)
            if not series:
                continue
            years = None if first is None and last is None else years_in(series, first, last)
            count = len(series) if years is None else len(years)
            total += count
            if len(page) == limit or (after_series is not None and (country_name, indicator_name) < after_series):
                continue
            start = 0
            if after is not None and (country_name, indicator_name) == after_series:
                years = sorted(series) if years is None else years
                start = bisect.bisect_right(years, after[2])
            if skip >= count - start:
                skip -= count - start
                continue
            start += skip
            skip = 0
            for year in (sorted(series) if years is None else years)[start:start + limit - len(page)]:
                page.append(((country_name, indicator_name, year), series[year]))
    return total, page



def export_batch(countries: dict[str, Indicators], sorted_countries: Callable[[], list[str]], country: str | None,
                 indicator: str | None, first: int | None, last: int | None, after: Key | None) -> list[Record]:
    """The next batch of an export after the key ``after`` (from the first record when None), read in one
    step."""
    batch: list[Record] = []
    country_names = sorted_countries() if country is None else [country]
    if after is not None:
        country_names = country_names[bisect.bisect_left(country_names, after[0]):]
    for country_name in country_names:
        indicators = countries.get(country_name, NO_INDICATORS)
        indicator_names = sorted(indicators) if indicator is None else [indicator]
        if after is not None and country_name == after[0]:
            indicator_names = indicator_names[bisect.bisect_left(indicator_names, after[1]):]
        for indicator_name in indicator_names:
            series = indicators.get(indicator_name, NO_SERIES)
            years = years_in(series, first, last)
            if after is not None and (country_name, indicator_name) == after[:2]:
                years = years[bisect.bisect_right(years, after[2]):]
            for year in years[:EXPORT_BATCH_RECORDS - len(batch)]:
                batch.append(((country_name, indicator_name, year), series[year]))
            if len(batch) == EXPORT_BATCH_RECORDS:
                return batch
    return batch



def years_in(series: Series, first: int | None, last: int | None) -> list[int]:
    # The single-year shortcut, which stores/redis/lua/records.lua takes too: one lookup, not a scan.
    if first is not None and first == last:
        return [first] if first in series else []
    return sorted(year for year in series
                  if (first is None or year >= first) and (last is None or year <= last))
