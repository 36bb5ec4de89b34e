"""The Redis store's reads across many series: list queries, the export and the facets.

Each runs in scripts of about SCAN_BUDGET records (``records.lua``, ``facets.lua``), so that one holds Redis no
longer than a few ms, and the worker yields to its other greenlets while it waits for each. The facets of
every country or indicator (or of one, by itself) are read from the tallies that the writes keep
(``tallies.lua``): they cost what they return, after a write too; those filtered by the other name read the
series they match (``facets.lua``), as do all of them until a store written by an older version has its
tallies built (:mod:`.tally_build`). The facets a worker read are kept while ``growth:generation``
(incremented by every write that creates or removes a record), the data marker (:mod:`.persistence`) and the
layout's version say nothing changed: a client asking for them again costs one round trip. Without the
marker (Redis lost its data, and no worker has set it again yet) nothing is kept: a generation counted again
from 0 could match one from before.
"""

import collections
from collections.abc import Callable, Iterator
from typing import Any

import ujson

from ...core.descriptions import COUNTRY
from ...core.records import Key, Number, Record
from ..base import EXPORT_BATCH_RECORDS, Facet, add_to_facet, facet_list
from . import scripts
from .keys import (
    DATA_MARKER,
    GENERATION,
    LAYOUT_VERSION,
    PREFIX,
    SIZE,
    TALLY_GENERATION,
    TALLY_RECORDS,
    VERSION,
    series_key,
)
from .tally_build import TallyBuild

# Records a list query examines per script, each series read counting SCAN_SERIES_COST more (it costs as
# much as that many years): a few ms of Redis time (docs/performance.md#list-queries-in-budgeted-scripts).
SCAN_BUDGET = 10_000
SCAN_SERIES_COST = 4
# An export's scripts examine about a batch's worth: past a full batch a script goes on only counting
# series, which an export does not need (the whole SCAN_BUDGET made each batch cost a scan of the store).
EXPORT_SCAN_BUDGET = EXPORT_BATCH_RECORDS
# Facets kept per worker, the least recently read dropped first: each filter is one (what keeping them
# saves: docs/performance.md#facets-and-range-lists-beside-other-clients).
FACETS_KEPT = 16
# What a facet read asks first, in one MGET: whether the facets it kept are still true (the generation, the
# data marker, the version), and what the tallies' self-check compares (size and generation against the
# tallies' counts: :mod:`.tally_build`).
FACET_STATE = (GENERATION, DATA_MARKER, VERSION, SIZE, TALLY_RECORDS, TALLY_GENERATION)
# Names a tallies script reads: three commands each, about what a list script's budget costs.
TALLY_NAMES = SCAN_BUDGET // SCAN_SERIES_COST
# Records a step of building the tallies examines: it counts each year read and writes the tallies too, so a
# quarter of a list script's budget holds Redis about as long (a whole one: ~26 ms a step on a loaded machine).
BUILD_BUDGET = SCAN_BUDGET // 4


class Reads:
    """List queries, the export and the facets, through ``call`` (one command, one reply, Redis's errors
    already made StoreUnavailable by the store)."""

    def __init__(self, call: Callable[..., Any]) -> None:
        self._call = call
        # (by, country, indicator) -> (generation, data marker and version when read, the facets)
        self._facets: collections.OrderedDict[tuple[str, str | None, str | None],
                                              tuple[list[bytes | None], list[Facet]]] = collections.OrderedDict()
        self._tally_build = TallyBuild(call, BUILD_BUDGET, SCAN_SERIES_COST)

    def _run(self, script: scripts.Script, arguments: list[Any]) -> Any:
        return script.run(self._call, [], arguments)

    def series(self, country: str, indicator: str, first: int | None = None,
               last: int | None = None) -> list[tuple[int, Number]]:
        key = series_key(country, indicator)
        if first is not None and first == last:
            raw = self._call("HGET", key, first)
            return [] if raw is None else [(first, ujson.loads(raw))]
        flat = self._call("HGETALL", key)
        values = sorted((int(flat[k]), flat[k + 1]) for k in range(0, len(flat), 2))
        return [(year, ujson.loads(raw)) for year, raw in values
                if (first is None or year >= first) and (last is None or year <= last)]

    def records(self, country: str | None = None, indicator: str | None = None, first: int | None = None,
                last: int | None = None, offset: int = 0, limit: int = 100,
                after: Key | None = None) -> tuple[int, list[Record]]:
        """Read in scripts of about SCAN_BUDGET records each, so that a query across the whole store holds
        Redis no longer than one of them at a time: each series is read whole, in one script, but a
        write between two scripts may show in the series read after it and not in those before. Every
        matching series is counted (``total``); ``after`` only decides where the page starts, in the same
        scripts, so a page after any key costs what the first page costs."""
        given = ["" if argument is None else argument for argument in (country, indicator, first, last)]
        cursor = ["", "", "", ""] if after is None else ["1", after[0], after[1], after[2]]
        page: list[Record] = []
        total, resume, skip = 0, ["", ""], offset
        while True:
            matching, flat, *resume, skip = self._run(
                scripts.RECORDS, [PREFIX, *given, skip, limit - len(page), *resume, SCAN_BUDGET, SCAN_SERIES_COST,
                                  *cursor])
            total += matching
            page += [((flat[k].decode(), flat[k + 1].decode(), int(flat[k + 2])), ujson.loads(flat[k + 3]))
                     for k in range(0, len(flat), 4)]
            if not resume[0]:
                return total, page

    def export(self, country: str | None = None, indicator: str | None = None, first: int | None = None,
               last: int | None = None) -> Iterator[list[Record]]:
        """Batches read by the list's script (``records.lua``), each from the series before the one of the
        last key sent (``resume``) and after that key (the cursor), so that a batch costs what a page after a
        cursor costs, without reading again the series before it; a script stops at SCAN_BUDGET, and the
        next one resumes where it stopped until the batch is full or the records run out."""
        given = ["" if argument is None else argument for argument in (country, indicator, first, last)]
        cursor: list[str | int] = ["", "", "", ""]  # after the key, once one was read
        resume = ("", "")
        # The series of the last key read, and the one before it: where the next batch's first script resumes.
        series = before = ("", "")
        batch: list[Record] = []
        while True:
            _, flat, *resume, _ = self._run(scripts.RECORDS, [PREFIX, *given, 0, EXPORT_BATCH_RECORDS - len(batch),
                                                              *resume, EXPORT_SCAN_BUDGET, SCAN_SERIES_COST, *cursor])
            for k in range(0, len(flat), 4):
                key = (flat[k].decode(), flat[k + 1].decode(), int(flat[k + 2]))
                if key[:2] != series:
                    series, before = key[:2], series
                batch.append((key, ujson.loads(flat[k + 3])))
            if len(batch) == EXPORT_BATCH_RECORDS:  # a script goes on counting: its resume says nothing then
                yield batch
                cursor, resume, batch = ["1", *batch[-1][0]], before, []
            elif not resume[0]:
                if batch:
                    yield batch
                return

    def facets(self, by: str, country: str | None = None, indicator: str | None = None) -> list[Facet]:
        """Those read last for the same ``by`` and filter while the generation, the data marker and the
        version are the same; else read again, the generation read before, so that a write made while they
        are read makes the next read read them again. The same round trip reads what the self-check compares
        (:mod:`.tally_build`): tallies whose counts are not the store's are not read, but counted again."""
        asked = (by, country, indicator)
        state = self._call("MGET", *FACET_STATE)
        kept = self._facets.get(asked)
        if kept is not None and kept[0] == state and state[1] is not None:
            self._facets.move_to_end(asked)
            return kept[1]
        name, other = (country, indicator) if by == COUNTRY else (indicator, country)
        generation, version, size, tallied, tallied_generation = (int(state[k] or 0) for k in (0, 2, 3, 4, 5))
        facets = None
        if version >= LAYOUT_VERSION and (size, generation) == (tallied, tallied_generation):
            if other is None:
                facets = self._tallied(by, name)
        else:
            self._tally_build.start()
        if facets is None:
            facets = self._scanned(by, country, indicator)
        self._facets[asked] = (state, facets)
        if len(self._facets) > FACETS_KEPT:
            self._facets.popitem(last=False)
        return facets

    def _tallied(self, by: str, name: str | None) -> list[Facet] | None:
        """The facets of every name of ``by``'s kind (or of ``name``) from their tallies, in name order; None
        when the store has none (emptied while they were read: its tallies are to be built again)."""
        facets: list[Facet] = []
        resume = ""
        while True:
            reply = self._run(scripts.TALLIES, [PREFIX, by, name or "", resume, TALLY_NAMES])
            if reply == [b"old"]:
                self._tally_build.start()
                return None
            rows, resume = reply
            facets += [(rows[k].decode(), rows[k + 1], rows[k + 2], rows[k + 3]) for k in range(0, len(rows), 4)]
            if not resume:
                return facets
            resume = resume.decode()

    def _scanned(self, by: str, country: str | None, indicator: str | None) -> list[Facet]:
        """The facets counted from the series that match (``facets.lua``)."""
        totals: dict[str, list[int]] = {}
        resume = ""
        while True:
            rows, resume = self._run(scripts.FACETS, [PREFIX, country or "", indicator or "", resume, SCAN_BUDGET,
                                                      by])
            for k in range(0, len(rows), 4):
                add_to_facet(totals, rows[k].decode(), rows[k + 1], rows[k + 2], rows[k + 3])
            if not resume:
                return facet_list(totals)
            resume = resume.decode()

    def build_tallies(self) -> None:
        """Have the facet tallies built, if the store was written without them (:mod:`.tally_build`)."""
        self._tally_build.start()

    def forget(self) -> None:
        """Drop the facets kept: the primary changed, and the next one may have other data and generation."""
        self._facets.clear()

    def close(self) -> None:
        self._tally_build.close()
