"""The body budget: bytes of request bodies the process holds at once, all requests together, so that
bodies cannot take the memory the store needs."""

import falcon

from ..http.responses import RETRY_AFTER_SECONDS


class BodyBudget:
    """Request-body bytes that the process holds at once, all requests together.

    A request reserves each read of its body before making it, so it holds what has arrived and the
    read under way, and gives the reservation back once the body and what was parsed from it are
    dropped, however the request ends: when its next read would pass the limit it is refused with a
    503 and nothing more is read. One event loop: plain counts.
    """

    def __init__(self, limit):
        self.limit = limit
        self.held = 0

    def reserve(self):
        """A reservation of no bytes yet, to grow; use it as a context manager, which gives it back."""
        return _Reservation(self)


class _Reservation:
    __slots__ = ("_budget", "size")

    def __init__(self, budget):
        self._budget = budget
        self.size = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._budget.held -= self.size
        self.size = 0

    def grow(self, size):
        budget = self._budget
        if budget.held + size > budget.limit:
            # Connection: close, as for a 413: the rest of the body is not read.
            raise falcon.HTTPServiceUnavailable(description="too many request bodies in memory; retry later",
                                                retry_after=RETRY_AFTER_SECONDS, headers={"Connection": "close"})
        budget.held += size
        self.size += size
