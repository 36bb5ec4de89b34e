"""The facet tallies' self-check, and the data migration to the current layout: the tallies of a store
written before them, or found wrong, built (again).

A store written by an older version (or emptied since) has no ``growth:version``: until it has, the writes
keep no tallies and facets are read from the series (``facets.lua``). One worker at a time (a lock in
Redis, which a worker that died loses after BUILD_LOCK_SECONDS) runs ``build_tallies.lua`` until it is done,
each step reading about a list script's budget of series from a cursor kept in Redis, so that any worker
resumes where another stopped and no step holds Redis longer than a list query does. Started at start-up
(:meth:`RedisStore.ping`) and by a facet read that finds the version missing or the tallies' counts wrong;
said in the log. Its first step, while the layout is current, is the self-check: the records the tallies
count against ``growth:size``, and the writes that kept them against ``growth:generation`` (O(1)); the
tallies a write of a worker that keeps none (an older version's, in a rolling upgrade) or an edit by hand
made wrong are dropped, said in a warning, and counted again.
"""

import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

import gevent

from ...core.logs import ThrottledLog
from ...core.loop import let_io_run
from ..base import StoreUnavailable
from . import scripts
from .keys import LAYOUT_VERSION, PREFIX, TALLY_BUILD_LOCK

# How long the lock outlives a builder's last step: what a worker that died delays the build by.
BUILD_LOCK_SECONDS = 5.0
# How often a worker looks again while another builds, or Redis is unavailable.
BUILD_POLL_SECONDS = 1.0
# Tallies found wrong this soon after a build are counted again only then, their facets read from the series
# meanwhile: a worker of an older version that keeps writing (a rolling upgrade) has them built again at most
# once a pause, not back to back.
REBUILD_PAUSE_SECONDS = 60.0

log = logging.getLogger("growth_gevent")


class TallyBuild:
    """Builds the tallies through ``call`` (one command, one reply, Redis's errors already made
    StoreUnavailable), in steps of ``budget`` records examined, each series counting ``series_cost`` more."""

    def __init__(self, call: Callable[..., Any], budget: int, series_cost: int) -> None:
        self._call = call
        self._budget = budget
        self._series_cost = series_cost
        self._token = secrets.token_hex(8)  # this worker's, as the lock's holder
        self._greenlet: gevent.Greenlet | None = None
        self._failures = ThrottledLog(1, 60.0, log)

    def start(self) -> None:
        """Build them in a greenlet of this worker's, unless it is at it already."""
        if self._greenlet is None or self._greenlet.dead:
            self._greenlet = gevent.spawn(self._build)

    def close(self) -> None:
        """Stop building; the lock released if this worker holds it, so that another resumes at once."""
        if self._greenlet is not None and not self._greenlet.dead:
            self._greenlet.kill()
            with contextlib.suppress(StoreUnavailable):
                scripts.RELEASE_BUILD.run(self._call, [TALLY_BUILD_LOCK], [self._token])

    def _build(self) -> None:
        started, read = time.monotonic(), 0
        arguments = [PREFIX, self._token, round(BUILD_LOCK_SECONDS * 1000), self._budget, self._series_cost,
                     max(1, round(REBUILD_PAUSE_SECONDS * 1000))]
        while True:
            try:
                reply = scripts.BUILD_TALLIES.run(self._call, [], arguments)
            except StoreUnavailable:
                gevent.sleep(BUILD_POLL_SECONDS)
                continue
            except Exception:  # noqa: BLE001 -- a bug: said, and tried again by the next facet read
                self._failures.log(logging.ERROR, "building the facet tallies failed", exc_info=True)
                return
            if reply[0] == b"busy":  # another worker builds them, or the pause after the last build lasts
                gevent.sleep(BUILD_POLL_SECONDS)
                continue
            if reply[0] == b"started":
                self._say_started(reply[1].decode(), reply[2])
            elif reply[0] == b"more":
                read += reply[1]
            else:  # done
                if reply[2] and read + reply[1]:
                    log.info("the Redis store's facet tallies are built, from %d series in %.1f s: its layout is "
                             "version %d", read + reply[1], time.monotonic() - started, LAYOUT_VERSION)
                return
            let_io_run()

    @staticmethod
    def _say_started(why: str, records: int) -> None:
        if why:
            log.warning("the Redis store's facet tallies were wrong (%s: a worker of an older version wrote, or "
                        "keys were edited by hand): dropped and counted again; facets are read from the series "
                        "until then", why)
        elif records:
            log.info("the Redis store was written by an older version: building its facet tallies (layout "
                     "version %d); facets are read from the series until then", LAYOUT_VERSION)
