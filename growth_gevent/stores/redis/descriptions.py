"""The descriptions of codes (core/descriptions.py) in Redis: ``growth:described:country`` and
``growth:described:indicator``, hashes of ``{CODE}\\n{field}`` -> text (a code holds no control character),
each patch written by ``describe.lua`` in one step, through the store's shared connection's ``write``, which
waits for replicas as a record's does. The store's methods are these functions."""

from typing import Any

from ...core.descriptions import COUNTRY, FIELDS, INDICATOR, MAX_DESCRIBED, Description, Patch, TooMany
from .keys import PREFIX
from .scripts import DESCRIBE

KEYS = {COUNTRY: PREFIX + "described:country", INDICATOR: PREFIX + "described:indicator"}


def describe(store: Any, by: str, patch: Patch) -> None:
    """Merge ``patch`` in; TooMany, nothing written, when the hash would hold more than MAX_DESCRIBED codes'
    worth of fields (judged before the script, so that concurrent patches may pass it by one patch)."""
    arguments: list[str] = []
    for code, change in patch.items():
        for field in FIELDS[by] if change is None else change:
            arguments += (f"{code}\n{field}", (change or {}).get(field) or "")
    call = store._shared.call
    if int(call("HLEN", KEYS[by])) + len(arguments) // 2 > MAX_DESCRIBED * len(FIELDS[by]):
        raise TooMany(by)
    if arguments:
        DESCRIBE.run(store._shared.write, [KEYS[by]], arguments)


def read(store: Any, by: str) -> dict[str, Description]:
    """Every description of ``by``'s codes."""
    flat = store._shared.call("HGETALL", KEYS[by])
    described: dict[str, Description] = {}
    for k in range(0, len(flat), 2):
        code, _, field = flat[k].decode().partition("\n")
        described.setdefault(code, {})[field] = flat[k + 1].decode()
    return described
