"""The Lua scripts of the Redis store, one file each in ``lua/``: every write is one script, so each is
atomic and the counts stay exact. Each file says which KEYS and ARGV it takes and what it returns."""

import hashlib
import pathlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis

_DIRECTORY = pathlib.Path(__file__).resolve().parent / "lua"


@dataclass(frozen=True)
class Script:
    name: str
    source: str
    sha: str = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "sha", hashlib.sha1(self.source.encode()).hexdigest())

    @classmethod
    def load(cls, name: str) -> "Script":
        """The script ``lua/{name}.lua``."""
        return cls(name, (_DIRECTORY / f"{name}.lua").read_text())

    def run(self, call: Callable[..., Any], keys: list, arguments: list) -> Any:
        """Its reply, through ``call`` (one command, one reply): by its SHA1, or whole when Redis does not
        have it (a NOSCRIPT answer means that it did not run)."""
        try:
            return call("EVALSHA", self.sha, len(keys), *keys, *arguments)
        except redis.exceptions.NoScriptError:
            return call("EVAL", self.source, len(keys), *keys, *arguments)


PUT = Script.load("put")
DELETE = Script.load("delete")
ENQUEUE = Script.load("enqueue")
APPLY_NEXT_CHUNK = Script.load("apply_next_chunk")
RECORDS = Script.load("records")
JOB_STATUS = Script.load("job_status")
FACETS = Script.load("facets")
