"""ETags and conditional requests (RFC 9110 §8.8.3, §13): a hash of the representation, so that every worker
gives one representation one tag and a change of the data changes it, whatever the store."""

import hashlib

import falcon

# Hex digits of the SHA-256 kept: 80 bits, far past any chance collision among one resource's versions.
ETAG_DIGITS = 20


def etag_of(body: bytes, headers: bytes = b"") -> str:
    """The strong ETag (unquoted) of a representation: its body, and what it sends in ``headers`` that a
    change should show (a CSV page's total and next link). A gzipped form is another representation: the
    gzip middleware sends it with this tag's weak form."""
    digest = hashlib.sha256(body)
    if headers:
        digest.update(headers)
    return digest.hexdigest()[:ETAG_DIGITS]


def send_tagged(req: falcon.Request, resp: falcon.Response, etag: str, weak: bool = False) -> bool:
    """Send ``resp`` with ``etag`` (its weak form ``W/"..."`` for a gzipped answer, the gzip middleware's
    rule); a 304 without its body when If-None-Match names it or is ``*`` (compared weakly, as RFC 9110
    §13.1.2 says for GET and HEAD): then True."""
    # Not falcon's properties, on the hot GET: the header set as it is, and parsed only when sent.
    resp.set_header("ETag", f'W/"{etag}"' if weak else f'"{etag}"')
    if "HTTP_IF_NONE_MATCH" not in req.env or not names(req.if_none_match, etag, weakly=True):
        return False
    resp.status = falcon.HTTP_304
    # What the 200 would have sent, for the gzip middleware to give the 304 the 200's ETag and Vary.
    resp.context.withheld_bytes = len(resp.data or b"")
    resp.data = None
    resp.content_type = None  # no content, so no type of it (a CSV answer set one)
    return True


def tag_body(req: falcon.Request, resp: falcon.Response, headers: bytes = b"") -> None:
    """:func:`send_tagged` with the ETag of the body ``resp.data`` (and ``headers``, as :func:`etag_of`)."""
    send_tagged(req, resp, etag_of(resp.data or b"", headers))


def names(tags: list | None, etag: str | None, weakly: bool) -> bool:
    """Whether the tags of an If-Match or If-None-Match header (falcon's parse) name the current ``etag``
    (None: there is no current representation, which only ``*`` does not name either). Strong
    comparison (If-Match) takes no weak tag."""
    if not tags or etag is None:
        return False
    return any(tag == "*" or (tag == etag and (weakly or not tag.is_weak)) for tag in tags)


def write_check(req: falcon.Request, etag_of_value, needs_record: bool = False):
    """The precondition of a PUT or DELETE with If-Match or If-None-Match, for the store to run on the
    record's current value in the same step as the write (``Store.put``'s ``check``); None without them.
    ``etag_of_value(value)`` is the tag of the record holding ``value``. ``needs_record``: the write fails
    without a record (a DELETE's 404), and then the preconditions are not judged (RFC 9110 §13.2.1)."""
    if_match, if_none_match = req.if_match, req.if_none_match
    if not if_match and not if_none_match:
        return None

    def check(current):
        if current is None and needs_record:
            return
        etag = None if current is None else etag_of_value(current)
        if if_match and not (etag is not None and names(if_match, etag, weakly=False)):
            raise falcon.HTTPPreconditionFailed(
                description="If-Match does not name the record's current ETag (or there is no record): nothing "
                            "was changed; GET the record and try again")
        if if_none_match and etag is not None and names(if_none_match, etag, weakly=True):
            raise falcon.HTTPPreconditionFailed(
                description="If-None-Match names the record's current ETag (or is * and the record exists): "
                            "nothing was changed")
    return check
