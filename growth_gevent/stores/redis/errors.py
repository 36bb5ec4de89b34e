"""Redis's errors as the store's: Redis being down, full or read-only is :class:`StoreUnavailable` (a ``503``),
anything else a bug."""

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

import redis

from ..base import StoreUnavailable
from .shared_connection import NotReplicated

# Redis answers that mean "not now" rather than "wrong": unreachable, out of memory, loading, a
# replica, a cluster resharding; and BUSY (a long script), which redis-py has no class for.
UNAVAILABLE = (redis.ConnectionError, redis.TimeoutError, redis.exceptions.OutOfMemoryError,
               redis.exceptions.ReadOnlyError, redis.exceptions.MasterDownError,
               redis.exceptions.TryAgainError)
BUSY = "BUSY "


class WriteNotReplicated(StoreUnavailable):
    """A write made on the primary that too few replicas confirmed in time; ``client_message`` says what
    that means for it."""

    def __init__(self, error: NotReplicated):
        super().__init__(f"redis: {error}")
        self.client_message = f"{error}; retry later"


class OnPrimary(Protocol):
    def _not_primary(self, error: Exception) -> None:
        """Redis answered READONLY: the node written to is a replica now."""


Parameters = ParamSpec("Parameters")
Result = TypeVar("Result")
Store = TypeVar("Store", bound=OnPrimary)


def available(method: Callable[Concatenate[Store, Parameters], Result],
              ) -> Callable[Concatenate[Store, Parameters], Result]:
    """``method`` of the store, raising StoreUnavailable where Redis is down, full or read-only."""
    @functools.wraps(method)
    def wrapper(store: Store, *args: Parameters.args, **kwargs: Parameters.kwargs) -> Result:
        try:
            return method(store, *args, **kwargs)
        except NotReplicated as error:
            raise WriteNotReplicated(error) from None
        except UNAVAILABLE as error:
            if isinstance(error, redis.exceptions.ReadOnlyError):
                store._not_primary(error)
            raise StoreUnavailable(f"redis: {error}") from None
        except redis.ResponseError as error:
            if not str(error).startswith(BUSY):
                raise
            raise StoreUnavailable(f"redis: {error}") from None
    return wrapper
