"""Preconditions (RFC 9110 §13): whether If-Match and If-None-Match name an ETag, and the check of a PUT or
DELETE that carries them. The tags themselves, and the 304 of a GET, are ``representation``'s."""

from collections.abc import Callable

import falcon

from ..core.records import Key, Number
from ..stores.base import Check


def names(tags: list | None, etag: str | None, weakly: bool) -> bool:
    """Whether the tags of an If-Match or If-None-Match header (falcon's parse) name the current ``etag``
    (None: there is no current representation, which only ``*`` does not name either). Strong
    comparison (If-Match) takes no weak tag."""
    if not tags or etag is None:
        return False
    return any(tag == "*" or (tag == etag and (weakly or not tag.is_weak)) for tag in tags)


def write_check(req: falcon.Request, key: Key, etag_of: Callable[[Key, Number], str], needs_record: bool = False
                ) -> Check | None:
    """The precondition of a PUT or DELETE of the record ``key`` with If-Match or If-None-Match, for the store to
    run on the record's current value in the same step as the write (``Store.put``'s ``check``); None without
    them. ``etag_of(key, value)`` is the tag of the record holding ``value``: a method made once, where a closure
    over ``key`` would be made a write. ``needs_record``: the write fails without a record (a DELETE's 404), and
    then the preconditions are not judged (RFC 9110 §13.2.1)."""
    env = req.env
    if "HTTP_IF_MATCH" not in env and "HTTP_IF_NONE_MATCH" not in env:  # most writes: no header parsed
        return None
    if_match, if_none_match = req.if_match, req.if_none_match
    if not if_match and not if_none_match:
        return None

    def check(current: Number | None) -> None:
        if current is None and needs_record:
            return
        etag = None if current is None else etag_of(key, current)
        if if_match and not (etag is not None and names(if_match, etag, weakly=False)):
            raise falcon.HTTPPreconditionFailed(
                description="If-Match does not name the record's current ETag (or there is no record): nothing "
                            "was changed; GET the record and try again")
        if if_none_match and etag is not None and names(if_none_match, etag, weakly=True):
            raise falcon.HTTPPreconditionFailed(
                description="If-None-Match names the record's current ETag (or is * and the record exists): "
                            "nothing was changed")
    return check
