"""What PEP 3333 asks of the exchange besides its socket, kept as tables made once: a header field's key in
the environ (CGI's names), a status line's code, and the Connection header a response gives itself."""

from http import HTTPStatus

from .head import COMMON_FIELD_NAMES

# Header fields that are not HTTP_* in the environ: CGI's own names.
_CGI_FIELDS = {"content-type": "CONTENT_TYPE", "content-length": "CONTENT_LENGTH"}


def environ_key(name: str) -> str | None:
    """A field's key in the environ: CGI's own name, else HTTP_ and the name upper-cased with _ for -; None
    for a name with an underscore (HTTP_A_B could be A-B or A_B: the one with an underscore is dropped)."""
    key = _CGI_FIELDS.get(name.lower())
    if key is None and "_" not in name:
        key = "HTTP_" + name.upper().replace("-", "_")
    return key


# The keys of the fields that clients, routers and browsers send, as they spell them: looked up once instead
# of made anew (lower, upper, replace) for each field of each request; any other name is made.
ENVIRON_KEYS = {spelled: environ_key(spelled) for spelled in COMMON_FIELD_NAMES}
# The code of each status line as falcon writes it ("200 OK"), looked up rather than parsed (int() of a str
# is a fifth of start_response); another status is parsed.
STATUS_CODES = {f"{status.value} {status.phrase}": status.value for status in HTTPStatus}


def connection_given(headers: list[tuple[str, str]]) -> str | None:
    """The value of a response's Connection header, lower-cased (the last one's, if several)."""
    given = None
    for name, value in headers:
        if name.lower() == "connection":
            given = value.lower()
    return given
