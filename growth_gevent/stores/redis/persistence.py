"""What a crash of Redis would lose, said at start-up; and Redis coming back without its data, noticed.

An acknowledged write survives a Redis crash only if Redis persists it: ``appendonly yes`` with
``appendfsync always`` loses nothing, ``everysec`` up to about a second, RDB snapshots alone every write
since the last one, no persistence everything. The store cannot change that (managed Redis often
refuses CONFIG), so it reads the settings and says what they mean, once per Redis run in this process
tree (workers are forked after the first process has said it).

With replicas and Sentinel, a failover to a replica loses the writes the old primary had not yet sent
it, unless each write waited for replicas (``GROWTH_REDIS_MIN_REPLICAS``, WAIT): the start-up log gives
the table of what each replica count and ``appendfsync`` lose in which failure, the setup's own row marked;
while fewer replicas are connected than it asks for (at the last check), ``/ready`` says that writes are refused.

Redis losing its data (restarted without persistence, or with its files lost; flushed) is noticed with
a marker: a key holding a random token, set when absent. A marker that changed or vanished since the
last check means the keys written before are gone; the run id (INFO) tells a restart from a flush. A new
run id is a restart when the server has been up no longer than since the last check, else another server:
a new primary, after a failover.
"""

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import gevent
import redis

from .keys import DATA_MARKER

# How often each process checks the marker: one GET and one INFO.
CHECK_SECONDS = 2.0

log = logging.getLogger("growth_gevent")
_said_for_runs: set[str | None] = set()  # run ids of the Redis servers whose persistence was said, in this process tree


# What each failure loses of the acknowledged writes, by appendfsync ("off": appendonly no) and by whether
# writes wait for a replica.
_CRASH_LOSS = {"always": "nothing", "everysec": "up to ~1 s", "no": "up to ~30 s (the OS's flush)",
               "off": "all since the last RDB save"}
_FAILOVER_LOSS = {False: "what was not yet replicated (ms; more if a replica lags)", True: "nothing acknowledged"}
_LOSS_COLUMNS = ("primary crashes, restarts", "fails over to a replica", "every node crashes at once")


def loss_table(min_replicas: int, fsync: str | None) -> str:
    """The table of what acknowledged writes each failure loses, by GROWTH_REDIS_MIN_REPLICAS (0, or 1 and
    more) and appendfsync; the row of ``min_replicas`` and ``fsync`` (None: unknown) marked."""
    rows = [("MIN_REPLICAS", "appendfsync", *_LOSS_COLUMNS)]
    marks = []
    for waits in (False, True):
        for policy, loss in _CRASH_LOSS.items():
            rows.append(("1+" if waits else "0", policy, loss, _FAILOVER_LOSS[waits], loss))
            marks.append(" <- this setup" if (min_replicas > 0) == waits and fsync == policy else "")
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [" | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(line + mark for line, mark in zip(lines, ["", *marks], strict=True))


def persistence_risk(appendonly: str, appendfsync: str, save: str) -> str | None:
    """What a crash of a Redis with these settings loses of the writes it acknowledged; None for nothing."""
    if appendonly == "yes":
        if appendfsync == "always":
            return None
        if appendfsync == "everysec":
            return "appendfsync everysec: a Redis crash loses up to ~1 s of acknowledged writes"
        return (f"appendfsync {appendfsync}: a Redis crash loses the acknowledged writes that the OS had not "
                "written to disk yet (up to ~30 s on Linux)")
    if not save.strip():
        return "appendonly no and save '': a Redis crash loses every record"
    longest = max(int(seconds) for seconds in save.split()[::2])
    return (f"appendonly no, save '{save}': a Redis crash loses every write since the last RDB snapshot "
            f"(up to {longest} s of them, more if a snapshot fails)")


class PersistenceWatch:
    """Says what a Redis crash would lose, and counts the times Redis was found without its data."""

    def __init__(self, call: Callable[..., Any], min_replicas: int = 0, interval: float = CHECK_SECONDS):
        """``call``: one command, one reply (a redis-py exception for an error reply or a lost connection);
        ``min_replicas``: GROWTH_REDIS_MIN_REPLICAS, for the table of losses."""
        self._call = call
        self._min_replicas = min_replicas
        self._interval = interval
        self.losses = 0
        # Why writes are refused for want of replicas to confirm them, at the last check; None: they are not.
        self.missing_replicas: str | None = None
        self._marker: bytes | None = None  # the marker's token at the last check
        self._run_id: str | None = None  # the server's at the last check (None: not known)
        self._checked_at = 0.0  # time.monotonic() of the last check
        self._greenlet: gevent.Greenlet | None = None

    def start(self) -> None:
        """Check now, if Redis answers, then every ``interval`` seconds."""
        if self._greenlet is None:
            self._check_when_reachable()
            self._greenlet = gevent.spawn(self._run)

    def close(self) -> None:
        if self._greenlet is not None:
            self._greenlet.kill()

    def _run(self) -> None:
        while True:
            gevent.sleep(self._interval)
            self._check_when_reachable()

    def _check_when_reachable(self) -> None:
        try:
            self.check()
        except redis.RedisError:
            pass  # unreachable, or refusing writes (read-only, out of memory): the next check

    def check(self) -> None:
        """The marker, the run id and, with ``min_replicas``, the replicas connected (INFO replication; a
        Redis that refuses INFO is taken to have enough: its writes say otherwise)."""
        run_id, uptime = self._server_run()
        if run_id not in _said_for_runs:
            self._say_persistence()
            _said_for_runs.add(run_id)
        marker = self._call("GET", DATA_MARKER)
        if marker is None:
            self._call("SET", DATA_MARKER, uuid.uuid4().hex, "NX")
            marker = self._call("GET", DATA_MARKER)
        now = time.monotonic()
        became = None
        if None not in (run_id, self._run_id) and run_id != self._run_id:
            if uptime is not None and uptime <= now - self._checked_at + 1:  # INFO's seconds are whole
                became = f"restarted (run id {self._run_id} -> {run_id})"
            else:  # up since before the last check: another server
                became = f"is a new primary (run id {self._run_id} -> {run_id}, up {uptime} s: a failover)"
        if self._marker is not None and marker != self._marker:
            self.losses += 1
            if None in (run_id, self._run_id):  # INFO refused: a restart and a flush look alike
                how = "restarted without it, or was flushed"
            elif became is not None:
                how = f"{became} without it"
            else:
                how = "was flushed, or its keys deleted"
            log.error("Redis lost its data: it %s; every record written before is gone (with GROWTH_PRELOAD, "
                      "the preload is loaded again). Make Redis persist writes: see docs/durability.md", how)
        elif became is not None:
            log.info("Redis %s with its data", became)
        self._marker, self._run_id, self._checked_at = marker, run_id, now
        if self._min_replicas:
            replicas = self._connected_replicas()
            self.missing_replicas = None if replicas is None or replicas >= self._min_replicas else (
                f"writes are refused: GROWTH_REDIS_MIN_REPLICAS={self._min_replicas}, but the Redis primary has "
                f"{replicas} replicas connected")

    def _server_run(self) -> tuple[str | None, int | None]:
        """The run id of the Redis server, new at each start, and its seconds up; None each when INFO is
        refused."""
        try:
            info = self._call("INFO", "server")
        except redis.ResponseError:
            return None, None
        fields = dict(line.split(":", 1) for line in info.decode(errors="replace").splitlines() if ":" in line)
        uptime = fields.get("uptime_in_seconds", "").strip()
        return fields.get("run_id", "").strip() or None, int(uptime) if uptime.isdigit() else None

    def _say_persistence(self) -> None:
        try:
            settings = {name: self._config_get(name) for name in ("appendonly", "appendfsync", "save")}
        except redis.ResponseError as error:  # CONFIG renamed or refused, as managed Redis services do
            log.warning("Redis persistence could not be checked (CONFIG GET: %s): unless Redis persists "
                        "writes (appendonly yes, appendfsync always), a Redis crash loses acknowledged writes", error)
            self._say_losses(None)
            return
        self._say_losses(settings["appendfsync"] if settings["appendonly"] == "yes" else "off")
        risk = persistence_risk(**settings)
        if risk is None:
            log.info("Redis persistence: appendonly yes, appendfsync always: a Redis crash loses no "
                     "acknowledged write")
        else:
            log.warning("Redis persistence: %s (for none lost: appendonly yes, appendfsync always; see "
                        "docs/durability.md)", risk)

    def _say_losses(self, fsync: str | None) -> None:
        replicas = self._connected_replicas()
        log.info("Redis: what a failure loses of the acknowledged writes (GROWTH_REDIS_MIN_REPLICAS=%d, "
                 "%s replicas connected; see docs/durability.md):", self._min_replicas,
                 "?" if replicas is None else replicas)
        for row in loss_table(self._min_replicas, fsync).splitlines():  # a line each: logfmt escapes a newline
            log.info("  %s", row)
        if replicas is not None and replicas < self._min_replicas:
            log.warning("GROWTH_REDIS_MIN_REPLICAS=%d, but the Redis primary has %d replicas connected: writes "
                        "answer 503 until enough replicas confirm them", self._min_replicas, replicas)

    def _connected_replicas(self) -> int | None:
        """INFO replication's connected_slaves; None when INFO is refused."""
        try:
            info = self._call("INFO", "replication").decode(errors="replace")
        except redis.ResponseError:
            return None
        for line in info.splitlines():
            if line.startswith("connected_slaves:"):
                return int(line.removeprefix("connected_slaves:"))
        return None

    def _config_get(self, name: str) -> str:
        reply = self._call("CONFIG", "GET", name)  # [name, value]; Redis 6 takes one name per call
        if len(reply) != 2:
            raise redis.ResponseError(f"no setting {name}")
        return reply[1].decode()
