"""One facet of the in-memory store, kept up to date as writes happen: each name's records and year range.

``/countries`` and ``/indicators`` (``Store.facets``) without a filter read a :class:`FacetTally` instead of
every series, so that they cost what they return. A count is exact at once. A range only grows as years
are added; a write that removes a name's first or last year marks the range stale, and the next read
computes it again from that name's series alone (``bounds``), as Redis keeps a sorted set's order
without sorting it for each read.
"""

from collections.abc import Callable, Iterator

from ...core.allocator import kept_name
from ...core.loop import let_io_run

# Names a facet lists between two yields to the event loop (~1 ms of work; figures in
# docs/performance.md#facets-and-range-lists-beside-other-clients).
NAMES_PER_SLICE = 2000


class FacetTally:
    """name -> [records, first year, last year] of one facet (the countries', or the indicators'), and its
    names in code point order.

    The sorted list is never changed in place: a read that yielded goes on over the list it began with,
    and reads a name's counts as they are then. New names wait in ``_unsorted`` until the next read sorts
    them in (timsort merges a sorted run and a short tail in about linear time). A name whose records fell
    to 0 keeps its place (its count 0, skipped) until those outnumber the others, so that a name deleted
    and written again does not cost a sort of everything.
    """

    def __init__(self) -> None:
        self._totals: dict[str, list[int]] = {}
        self._names: list[str] = []
        self._unsorted: list[str] = []
        self._emptied = 0  # names in _totals with no records
        self._stale: set[str] = set()  # names whose first or last year may be one that was removed

    def add(self, name: str, records: int, first: int, last: int) -> None:
        """Count ``records`` more in ``name``, of years from ``first`` to ``last``."""
        counts = self._totals.get(name)
        if counts is None:
            name = kept_name(name)
            self._totals[name] = [records, first, last]
            self._unsorted.append(name)
        elif not counts[0]:
            counts[:] = records, first, last
            self._emptied -= 1
        else:
            counts[0] += records
            if first < counts[1]:
                counts[1] = first
            if last > counts[2]:
                counts[2] = last

    def remove(self, name: str, year: int) -> None:
        """Count one record less in ``name``, of ``year``."""
        counts = self._totals[name]
        counts[0] -= 1
        if not counts[0]:
            self._emptied += 1
            self._stale.discard(name)
        elif year == counts[1] or year == counts[2]:
            self._stale.add(name)

    def facets(self, bounds: Callable[[str], tuple[int, int]]) -> Iterator[tuple[str, int, int, int]]:
        """``(name, records, first, last)`` of every name with records, in code point order, yielding to the
        event loop between slices; ``bounds(name)``: the first and last year of the records ``name`` has,
        read from its series when its range is stale."""
        names = self.names()
        totals = self._totals
        for start in range(0, len(names), NAMES_PER_SLICE):
            if start:
                let_io_run()
            for name in names[start:start + NAMES_PER_SLICE]:
                counts = totals.get(name)
                if counts is None or not counts[0]:
                    continue
                if name in self._stale:
                    counts[1], counts[2] = bounds(name)
                    self._stale.discard(name)
                yield name, counts[0], counts[1], counts[2]

    def names(self) -> list[str]:
        """Every name with records, and maybe some whose records were all removed, in code point order: a
        list never changed once returned."""
        totals = self._totals
        if self._emptied > len(totals) // 2:
            for name in [name for name, counts in totals.items() if not counts[0]]:
                del totals[name]
            self._names = [name for name in self._names if name in totals]
            self._unsorted = [name for name in self._unsorted if name in totals]
            self._emptied = 0
        if self._unsorted:
            names = self._names + self._unsorted
            names.sort()
            self._names, self._unsorted = names, []
        return self._names
