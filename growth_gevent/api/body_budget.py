"""The body budgets: bytes of request bodies the process holds at once, so that bodies cannot take the memory
the store needs, and no handful of clients can take what the others need.

``GROWTH_BODY_BUFFER_BYTES`` is split in two budgets: one for bulk bodies, and a reserve of its own for
single-record bodies (``RECORD_BODIES_SHARE`` of it; a PUT body is at most what a record's can be, about a
kilobyte), so that bulk uploads, however many, never refuse a PUT (as PostgreSQL keeps
``superuser_reserved_connections`` out of ``max_connections``). In each, the bodies of one client (its
address, its /64 for IPv6: ``http.clients.client_key``; behind a trusted router, the address it forwards)
hold at most ``GROWTH_BODY_BUFFER_CLIENT_PERCENT`` of what the other clients leave free: the first client
may take a quarter of the budget, the next a quarter of the rest, so that n clients together leave at least
(3/4)^n of it to everyone else (24 % for five), where a fixed share let four fill it. A body is charged for
bytes once they are received, never ahead of them, and gives its charge back however its request ends. One
event loop: plain counts.
"""

from typing import Self

import falcon

from ..http.clients import client_key
from ..http.responses import RETRY_AFTER_SECONDS

# The share of GROWTH_BODY_BUFFER_BYTES kept for single-record bodies: 4 MiB of the default 64 MiB, room for
# 64 PUT bodies of the largest size at once, or tens of thousands of the usual `{"value": n}`.
RECORD_BODIES_SHARE = 1 / 16


def split_budgets(total: int, client_percent: int) -> tuple["BodyBudget", "BodyBudget"]:
    """The bulk bodies' budget and the single-record bodies' own, ``total`` bytes between them, one client
    holding at most ``client_percent`` of what the others leave of each."""
    records = int(total * RECORD_BODIES_SHARE)
    bulk, record = (BodyBudget(limit, client_percent) for limit in (total - records, records))
    return bulk, record


class BodyBudget:
    """Request-body bytes that the process holds at once: ``limit`` for all requests together, and for those
    of one client ``client_percent`` of what the other clients leave of it (``client_limit`` when they hold
    nothing). A request charges what it has received, and is refused with a 503 (``Retry-After``, the rest
    of its body not read) when that would pass either.
    """

    def __init__(self, limit: int, client_percent: int) -> None:
        self.limit = limit
        self.client_percent = client_percent
        self.client_limit = limit * client_percent // 100
        self.held = 0
        self.held_by: dict[str, int] = {}  # client key -> the bytes its bodies hold; none held, not listed

    def reserve(self, address: str) -> "Charge":
        """A charge of no bytes yet, for a body from the client at ``address``, to grow; use it as a context
        manager, which gives it back."""
        return Charge(self, client_key(address))


_ALL_BODIES = "too many request bodies in memory; retry later"
_CLIENT_BODIES = "too many request bodies in memory from this client address; retry later"


def _refusal(description: str) -> falcon.HTTPServiceUnavailable:
    # Connection: close, as for a 413: the rest of the body is not read.
    return falcon.HTTPServiceUnavailable(description=description, retry_after=RETRY_AFTER_SECONDS,
                                         headers={"Connection": "close"})


class Charge:
    __slots__ = ("_budget", "_client", "size")

    def __init__(self, budget: BodyBudget, client: str) -> None:
        self._budget = budget
        self._client = client
        self.size = 0

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.size:
            budget = self._budget
            budget.held -= self.size
            left = budget.held_by.pop(self._client) - self.size
            if left:
                budget.held_by[self._client] = left
            self.size = 0

    def check_room(self) -> None:
        """A 503 unless one byte more would fit: asked before a body is read, so that a full budget reads
        nothing of it."""
        budget = self._budget
        if budget.held >= budget.limit:
            raise _refusal(_ALL_BODIES)
        mine = budget.held_by.get(self._client, 0)
        if mine * 100 >= budget.client_percent * (budget.limit - budget.held + mine):
            raise _refusal(_CLIENT_BODIES)

    def add(self, size: int) -> None:
        """Charge ``size`` bytes more, just received; a 503 when they do not fit."""
        budget = self._budget
        held = budget.held + size
        if held > budget.limit:
            raise _refusal(_ALL_BODIES)
        held_by = budget.held_by
        mine = held_by.get(self._client, 0) + size
        # At most the percent of what the others leave: limit - (held - mine), the same with or without size.
        if mine * 100 > budget.client_percent * (budget.limit - held + mine):
            raise _refusal(_CLIENT_BODIES)
        if size:
            budget.held = held
            held_by[self._client] = mine
            self.size += size
