"""The Lua scripts of the Redis store, one file each in ``lua/``: every write is one script, so each is
atomic and the counts stay exact. Each file says which KEYS and ARGV it takes and what it returns. Redis
scripts cannot include one another, so the functions that several share (``order.lua``, ``tally.lua``) are
prepended to them."""

import hashlib
import pathlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis

from .keys import LAYOUT_VERSION

_DIRECTORY = pathlib.Path(__file__).resolve().parent / "lua"


@dataclass(frozen=True)
class Script:
    name: str
    source: str
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha", hashlib.sha1(self.source.encode()).hexdigest())

    @classmethod
    def load(cls, name: str, *preludes: str) -> "Script":
        """The script ``lua/{name}.lua``, after the files ``lua/{prelude}.lua`` it uses, without their comment
        lines: many writers that find Redis without it (restarted) send it whole at once."""
        lines = [line for part in (*preludes, name) for line in (_DIRECTORY / f"{part}.lua").read_text().splitlines()
                 if not line.lstrip().startswith("--")]
        return cls(name, "\n".join(lines).replace("{{LAYOUT_VERSION}}", str(LAYOUT_VERSION)))

    def run(self, call: Callable[..., Any], keys: list[str], arguments: list[Any]) -> Any:
        """Its reply, through ``call`` (one command, one reply): by its SHA1, or whole when Redis does not
        have it (a NOSCRIPT answer means that it did not run)."""
        try:
            return call("EVALSHA", self.sha, len(keys), *keys, *arguments)
        except redis.exceptions.NoScriptError:
            return call("EVAL", self.source, len(keys), *keys, *arguments)


# The scripts that write or read the facet tallies, after the functions they share.
_TALLYING = ("order", "tally")
PUT = Script.load("put", *_TALLYING)
DELETE = Script.load("delete", *_TALLYING)
ENQUEUE = Script.load("enqueue")
APPLY_NEXT_CHUNK = Script.load("apply_next_chunk", *_TALLYING, "tally_many")
RECORDS = Script.load("records", "order")
JOB_STATUS = Script.load("job_status")
FACETS = Script.load("facets")
TALLIES = Script.load("tallies", *_TALLYING)
BUILD_TALLIES = Script.load("build_tallies", *_TALLYING, "tally_many")
RELEASE_BUILD = Script.load("release_build")
DESCRIBE = Script.load("describe")
EVERY = (PUT, DELETE, ENQUEUE, APPLY_NEXT_CHUNK, RECORDS, JOB_STATUS, FACETS, TALLIES, BUILD_TALLIES, RELEASE_BUILD,
         DESCRIBE)
