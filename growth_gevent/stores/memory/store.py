"""The in-memory store: one process's records in nested dicts, bulk jobs applied by a greenlet."""

import logging
from collections.abc import Iterator

from ...core.allocator import kept_name
from ...core.descriptions import COUNTRY, Description, Descriptions, Patch
from ...core.loop import let_io_run
from ...core.records import Key, Number, Record
from ..base import (
    EXPORT_BATCH_RECORDS,
    JOBS_KEPT,
    BulkQueueFull,
    BulkStatus,
    Check,
    Facet,
    Health,
    JobStatus,
    Store,
    StoreFull,
    WritesRefused,
    add_to_facet,
    facet_list,
)
from .applier import BulkApplier
from .facet_tally import NAMES_PER_SLICE, FacetTally
from .reads import NO_INDICATORS, NO_SERIES, Indicators, Series, export_batch, page_of, years_in
from .write_log import NoLog, WriteLog, covering, covering_sized

log = logging.getLogger("growth_gevent")



class MemoryStore(Store):
    """Nested dicts, country -> indicator -> year -> value, with no lock.

    Nesting is the index: a series or a country slice is found without looking at other records, and
    no record needs a key tuple. Beside it, what the facets need is kept as writes happen: each
    country's and each indicator's records and years (:class:`FacetTally`), and each indicator's series
    by country, so that a facet reads only what it returns. The invariant that makes a lock needless: no
    write yields to another greenlet (none does I/O or sleeps; a bulk chunk is applied in one call, the
    applier yields between chunks), so no write can interleave with another write, and :meth:`copy` is
    one step. Keep it so: a write that yielded would need a lock again. The long reads (a list query, a
    facet) yield between slices of series, over lists of names taken before, so that one of them does not
    hold every other request: like the Redis store's, they may show a write made while they ran.

    The store has one durability partner (:mod:`.write_log`): the journal, or :class:`NoLog`. It is told
    of each write in that step, and makes the write wait for it outside the step; reads go through it when
    it makes them wait. It holds the rest of durability: while it refuses writes (after a failed journal
    write or snapshot, as Redis's ``stop-writes-on-bgsave-error``), writes raise :class:`WritesRefused` and
    reads go on; :meth:`health` is its.
    """

    name = "memory"

    def __init__(self, *, chunk_size: int, queue_records: int, max_records: int, jobs_kept: int = JOBS_KEPT,
                 write_log: WriteLog | None = None):
        """``chunk_size``: records a bulk load applies between yields; ``queue_records``: the most records
        accepted and not yet applied; ``max_records``: the most records held (GROWTH_BULK_CHUNK_RECORDS,
        GROWTH_BULK_QUEUE_RECORDS and GROWTH_MAX_RECORDS); ``jobs_kept``: the bulk jobs job_status() knows;
        ``write_log``: what keeps the writes past the process (:mod:`.write_log`); None: nothing does."""
        self._countries: dict[str, Indicators] = {}
        self._size = 0
        self._bulk = BulkApplier(self._apply_chunk, chunk_size, jobs_kept)
        self.next_job = 1
        self._queue_records = queue_records
        self._max_records = max_records
        # The keys that bulk jobs accepted and not yet applied will add, none of them stored, each once:
        # key -> the job that counted it. What the record cap holds for those jobs.
        self._new_keys: dict[Key, int] = {}
        self._initial_data_taken = False
        # (country, indicator) -> (first year, last year) of the series, for facets(): filled when asked
        # for, dropped by a write that adds or removes one of its years (a value replaced changes neither).
        self._year_ranges: dict[tuple[str, str], tuple[int, int]] = {}
        self._country_tally = FacetTally()
        self._indicator_tally = FacetTally()
        self._by_indicator: dict[str, dict[str, Series]] = {}  # indicator -> country -> its series
        self._descriptions = Descriptions()
        self._log = NoLog() if write_log is None else write_log
        self._reads_wait = self._log.reads_wait
        self._log.attach(self)

    @property
    def write_log(self) -> WriteLog:
        """The durability partner this store's writes are given to."""
        return self._log

    def get(self, key: Key) -> Number | None:
        if not self._reads_wait:
            return self._get(key)
        return self._log.read(lambda: self._get(key), lambda written, _: written == key)

    def _get(self, key: Key) -> Number | None:
        country, indicator, year = key
        series = self._countries.get(country, NO_INDICATORS).get(indicator)
        return None if series is None else series.get(year)

    def put(self, key: Key, value: Number, check: Check | None = None) -> bool:
        partner = self._log
        if partner.refusal is not None:
            raise WritesRefused(partner.refusal)
        country, indicator, year = key
        # Not self.get: a store built on this one may make its reads wait, and a write must not yield.
        series = self._countries.get(country, NO_INDICATORS).get(indicator, NO_SERIES)
        previous = series.get(year)
        if check is not None:
            check(previous)
        created = previous is None
        if created:  # only a new record can fill the store
            held = self._size + len(self._new_keys)
            if held >= self._max_records and key not in self._new_keys:
                raise StoreFull(held, self._max_records, 1)
            series = self._series_to_write(country, indicator)
            self._size += 1
            if self._new_keys:
                self._new_keys.pop(key, None)
            if self._year_ranges:
                self._year_ranges.pop((country, indicator), None)
            self._count(country, indicator, 1, year, year)
        series[year] = value
        partner.wrote(key, value, previous, created)
        return created

    def describe(self, by: str, patch: Patch) -> None:
        partner = self._log
        if partner.refusal is not None:
            raise WritesRefused(partner.refusal)
        held = self._descriptions.held[by]
        previous = {code: held.get(code, {}) for code in patch}
        partner.described(by, self._descriptions.apply(by, patch), previous)

    def descriptions(self, by: str) -> dict[str, Description]:
        return self._descriptions.held[by]

    def _series_to_write(self, country: str, indicator: str) -> Series:
        """The series, created (and indexed by its indicator) when it is new, under the names the store keeps
        (kept_name: not the caller's strings, which may be a load's)."""
        indicators = self._countries.get(country)
        series = None if indicators is None else indicators.get(indicator)
        if series is None:  # both names copied once, here
            country, indicator = kept_name(country), kept_name(indicator)
            if indicators is None:
                indicators = self._countries[country] = {}
            series = indicators[indicator] = {}
            self._by_indicator.setdefault(indicator, {})[country] = series
        return series

    def _count(self, country: str, indicator: str, records: int, first: int, last: int) -> None:
        """``records`` added to the series, of years from ``first`` to ``last``: counted in both facets."""
        self._country_tally.add(country, records, first, last)
        self._indicator_tally.add(indicator, records, first, last)

    def delete(self, key: Key, check: Check | None = None) -> bool:
        if self._log.refusal is not None:
            raise WritesRefused(self._log.refusal)
        previous = self._get(key)
        if check is not None:
            check(previous)
        if not self._remove(key):
            return False
        self._log.wrote(key, None, previous, True)
        return True

    def _remove(self, key: Key) -> bool:
        country, indicator, year = key
        indicators = self._countries.get(country, NO_INDICATORS)
        series = indicators.get(indicator, NO_SERIES)
        if series.pop(year, None) is None:
            return False
        if self._year_ranges:
            self._year_ranges.pop((country, indicator), None)
        self._country_tally.remove(country, year)
        self._indicator_tally.remove(indicator, year)
        if not series:
            del indicators[indicator]
            if not indicators:
                del self._countries[country]
            countries = self._by_indicator[indicator]
            del countries[country]
            if not countries:
                del self._by_indicator[indicator]
        self._size -= 1
        return True

    def size(self) -> int:
        if not self._reads_wait:
            return self._size
        return self._log.read(lambda: self._size, lambda _, sized: sized)

    def series(self, country: str, indicator: str, first: int | None = None,
               last: int | None = None) -> list[tuple[int, Number]]:
        if not self._reads_wait:
            return self._series(country, indicator, first, last)
        return self._log.read(lambda: self._series(country, indicator, first, last),
                              covering(country, indicator, first, last))

    def _series(self, country: str, indicator: str, first: int | None,
                last: int | None) -> list[tuple[int, Number]]:
        series = self._countries.get(country, NO_INDICATORS).get(indicator, NO_SERIES)
        return [(year, series[year]) for year in years_in(series, first, last)]

    def records(self, country: str | None = None, indicator: str | None = None, first: int | None = None,
                last: int | None = None, offset: int = 0, limit: int = 100,
                after: Key | None = None) -> tuple[int, list[Record]]:
        def read() -> tuple[int, list[Record]]:
            return page_of(self._countries, self._country_tally.names, country, indicator, first, last, offset,
                           limit, after)
        # Every write in the filter's range: it may move the page, and it counts in the total.
        return self._log.read(read, covering(country, indicator, first, last)) if self._reads_wait else read()

    def export(self, country: str | None = None, indicator: str | None = None, first: int | None = None,
               last: int | None = None) -> Iterator[list[Record]]:
        after = None
        while True:
            batch = self._export_batch(country, indicator, first, last, after)
            if batch:
                yield batch
            if len(batch) < EXPORT_BATCH_RECORDS:
                return
            after = batch[-1][0]

    def _export_batch(self, country: str | None, indicator: str | None, first: int | None, last: int | None,
                      after: Key | None) -> list[Record]:
        """The next batch after the key ``after`` (from the first record when None), read in one step."""
        def read() -> list[Record]:
            return export_batch(self._countries, self._country_tally.names, country, indicator, first, last, after)
        # A write past the batches sent, in the filter's range, may be in this one.
        return self._log.read(read, covering(country, indicator, first, last, after)) if self._reads_wait else read()

    def facets(self, by: str, country: str | None = None, indicator: str | None = None) -> list[Facet]:
        if not self._reads_wait:
            return self._facets(by, country, indicator)
        return self._log.read(lambda: self._facets(by, country, indicator), covering_sized(country, indicator))

    def _facets(self, by: str, country: str | None, indicator: str | None) -> list[Facet]:
        """Without a filter, from the facet's :class:`FacetTally`; with one, from the series it matches
        (a country's, or an indicator's by country), each counted with its year range."""
        if country is None and indicator is None:
            if by == COUNTRY:
                return list(self._country_tally.facets(self._country_years))
            return list(self._indicator_tally.facets(self._indicator_years))
        matching = self._matching_series(country, indicator)
        totals: dict[str, list[int]] = {}
        for start in range(0, len(matching), NAMES_PER_SLICE):
            if start:
                let_io_run()
            for country_name, indicator_name, series in matching[start:start + NAMES_PER_SLICE]:
                if series:  # not removed since
                    add_to_facet(totals, country_name if by == COUNTRY else indicator_name, len(series),
                                 *self._years(country_name, indicator_name, series))
        return facet_list(totals)

    def _matching_series(self, country: str | None, indicator: str | None) -> list[tuple[str, str, Series]]:
        """``(country, indicator, series)`` of the series of ``country`` and ``indicator`` (either given)."""
        if country is not None and indicator is not None:
            return [(country, indicator, self._countries.get(country, NO_INDICATORS).get(indicator, NO_SERIES))]
        if country is not None:
            return [(country, name, series) for name, series in self._countries.get(country, NO_INDICATORS).items()]
        assert indicator is not None
        return [(name, indicator, series) for name, series in self._by_indicator.get(indicator, {}).items()]

    def _years(self, country: str, indicator: str, series: Series) -> tuple[int, int]:
        """The first and last year of a series that has records, kept until a write adds or removes one."""
        years = self._year_ranges.get((country, indicator))
        if years is None:
            years = self._year_ranges[(country, indicator)] = (min(series), max(series))
        return years

    def _country_years(self, country: str) -> tuple[int, int]:
        ranges = [self._years(country, indicator, series) for indicator, series in self._countries[country].items()]
        return min(first for first, _ in ranges), max(last for _, last in ranges)

    def _indicator_years(self, indicator: str) -> tuple[int, int]:
        ranges = [self._years(country, indicator, series) for country, series in self._by_indicator[indicator].items()]
        return min(first for first, _ in ranges), max(last for _, last in ranges)

    def restore_descriptions(self, by: str, descriptions: dict[str, Description]) -> None:
        self._descriptions.restore(by, descriptions)

    def copy_descriptions(self) -> dict[str, dict[str, Description]]:
        return {by: dict(held) for by, held in self._descriptions.held.items()}

    def copy(self) -> dict[str, Indicators]:
        """A consistent copy, ``{country: {indicator: {year: value}}}``, taken in one step.

        Only the dicts are copied (docs/performance.md#the-snapshots-copy), so it can be taken without yielding
        and without stalling requests; flattening it is left to whoever has the time.
        """
        return {country: {indicator: dict(series) for indicator, series in indicators.items()}
                for country, indicators in self._countries.items()}

    def submit_bulk(self, records: list[Record], initial: bool = False) -> int | None:
        # The initial-data rule and the queue bound (Store.submit_bulk), which stores/redis/lua/enqueue.lua
        # decides in the same way for the Redis store.
        if initial:
            if self._size or not self._bulk.is_idle() or self._initial_data_taken:
                return None
            self._initial_data_taken = True
            if len(records) > self._max_records:
                log.warning("initial data of %d records is more than the store's maximum of %d "
                            "(GROWTH_MAX_RECORDS): loaded whole; new records are refused until fewer are "
                            "stored", len(records), self._max_records)
        else:
            self.check_bulk_room(len(records))
            self._reserve_new_keys(records, self.next_job)
        number = self.next_job
        self.next_job += 1
        self._log.bulk_accepted(number, records, initial)
        return number

    def check_bulk_room(self, records: int) -> None:
        if self._log.refusal is not None:
            raise WritesRefused(self._log.refusal)
        pending = self._bulk.records_waiting() + self._log.records_accepted()
        if pending + records > self._queue_records:
            raise BulkQueueFull(pending, self._queue_records, records)

    def _reserve_new_keys(self, records: list[Record], job: int) -> None:
        """Count the keys ``records`` add (not stored, not counted by a job waiting, each once); raise
        :class:`StoreFull` when the store could pass ``max_records`` with them, else count them for
        ``job`` until they are stored. One step that does not yield, as every write is."""
        countries = self._countries
        counted = self._new_keys
        new = {}
        series = NO_SERIES
        country = indicator = None
        for key, _ in records:
            # A load's records come series by series, their names interned: the series is looked up again
            # only when it changes (a third less time on the 3 MB load).
            record_country, record_indicator, year = key
            if record_indicator is not indicator or record_country is not country:
                country, indicator = record_country, record_indicator
                series = countries.get(country, NO_INDICATORS).get(indicator, NO_SERIES)
            if year not in series and key not in counted:
                new[key] = job
        held = self._size + len(counted)
        if held + len(new) > self._max_records:
            raise StoreFull(held, self._max_records, len(new))
        counted.update(new)

    def release_new_keys(self, number: int) -> None:
        counted = self._new_keys
        for key in [key for key, owner in counted.items() if owner == number]:
            del counted[key]

    def bulk_status(self) -> BulkStatus:
        return self._bulk.status()

    def job_status(self, job: int) -> JobStatus | None:
        return self._bulk.job_status(job)

    def wait_idle(self, timeout: float | None = None) -> bool:
        return self._bulk.wait_idle(timeout)

    def close(self) -> None:
        self._bulk.close()
        self._log.close()

    def health(self) -> Health:
        return self._log.health()

    # What a write log may do (write_log.LoggedStore): nothing of it is logged again or refused.

    def restore(self, key: Key, value: Number | None) -> None:
        if value is None:
            self._remove(key)
        else:
            self._store_chunk([(key, value)])

    def apply_records(self, records: list[Record]) -> None:
        self._store_chunk(records)

    def queue_job(self, records: list[Record], number: int, applied: int) -> None:
        self._bulk.submit(records, number, applied)

    def _apply_chunk(self, chunk: list[Record]) -> None:
        """The applier's: ``chunk`` stored, then logged."""
        self._store_chunk(chunk)
        self._log.chunk_applied(chunk)

    def _store_chunk(self, chunk: list[Record]) -> None:
        counted = self._new_keys
        counting = bool(counted)
        ranges = self._year_ranges
        added = 0
        # A load's records come series by series: the series is looked up, and what it adds counted in the
        # facets, once per run of its records.
        series = NO_SERIES
        country = indicator = ""
        run = first = last = 0
        # Once per record of every load: comparisons, not calls (min, max, len): the 3 MB load applied in 12 ms, not 21.
        for key, value in chunk:
            record_country, record_indicator, year = key
            if record_indicator is not indicator or record_country is not country:
                if run:
                    self._count(country, indicator, run, first, last)
                country, indicator, run = record_country, record_indicator, 0
                series = self._series_to_write(country, indicator)
            # The store's own copy of each value, made now: the parse's copy lies among the load's objects, and
            # a replaced value's copy takes the place the value it replaces leaves (core/allocator.py).
            if year in series:
                series[year] = value * 1
                continue
            series[year] = value * 1
            added += 1
            if counted:  # stored now: counted by size
                counted.pop(key, None)
            if ranges:
                ranges.pop((country, indicator), None)
            if not run:
                first = last = year
            elif year < first:
                first = year
            elif year > last:
                last = year
            run += 1
        if run:
            self._count(country, indicator, run, first, last)
        self._size += added
        if counting and not counted:
            self._new_keys = {}  # an emptied dict keeps its table: 1.3 MB after the 3 MB file's first load
