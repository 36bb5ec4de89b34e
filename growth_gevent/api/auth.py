"""Access control: writes (PUT, DELETE, the bulk POST) need a bearer token when tokens are configured
(GROWTH_API_TOKENS or GROWTH_API_TOKENS_FILE); reads stay public."""

import hashlib
import hmac
import ipaddress
import logging
from typing import Any, Protocol

import falcon

log = logging.getLogger("growth_gevent")

WRITE_METHODS = frozenset({"PUT", "DELETE", "POST", "PATCH"})
REALM = 'Bearer realm="growth"'
_SCHEME = "bearer "


class TokenSettings(Protocol):
    """What access control reads of the configuration (``growth_gevent.config.Config``, which this layer may
    not import)."""

    @property
    def api_tokens(self) -> tuple[str, ...] | None: ...
    @property
    def api_tokens_file(self) -> tuple[str, ...] | None: ...
    @property
    def host(self) -> str: ...


def configured_tokens(config: TokenSettings) -> tuple[str, ...]:
    """The tokens of whichever of the two settings is set (the config refuses both), or none."""
    return config.api_tokens or config.api_tokens_file or ()


class RequireToken:
    """A falcon middleware: a write to a route that has it needs ``Authorization: Bearer <token>``.

    Checked once the route is known (an unknown path stays a 404, a method the route lacks a 405) and
    before the responder reads the body: a refused write reads nothing, and the server closes the
    connection when a body is left unread. Each presented token is compared with every configured one,
    as digests of equal length, without stopping at a match: the time taken says nothing about which
    token matched or how much of one did.
    """

    def __init__(self, tokens: tuple[str, ...]):
        self._digests = tuple(_digest(token.encode()) for token in tokens)

    def process_resource(self, req: falcon.Request, resp: falcon.Response,
                         resource: object, params: dict[str, Any]) -> None:
        if req.method not in WRITE_METHODS or not hasattr(resource, f"on_{req.method.lower()}"):
            return
        header = req.get_header("Authorization") or ""
        if header[:len(_SCHEME)].lower() != _SCHEME:
            raise falcon.HTTPUnauthorized(description="this write needs a token: Authorization: Bearer <token>",
                                          challenges=[REALM])
        if not self.accepts(header[len(_SCHEME):].strip().encode("latin-1", "replace")):
            raise falcon.HTTPUnauthorized(description="the bearer token is not valid",
                                          challenges=[f'{REALM}, error="invalid_token"'])

    def accepts(self, token: bytes) -> bool:
        presented = _digest(token)
        matched = False
        for digest in self._digests:
            matched |= hmac.compare_digest(digest, presented)
        return matched


def _digest(token: bytes) -> bytes:
    return hashlib.sha256(token).digest()


def warn_if_open(config: TokenSettings) -> None:
    """One warning at start-up when anyone who can reach the port can change every record."""
    if not configured_tokens(config) and not is_loopback(config.host):
        log.warning("HOST=%s is not a loopback address and GROWTH_API_TOKENS is not set: anyone who can "
                    "reach this port can change or delete every record; set GROWTH_API_TOKENS (or "
                    "GROWTH_API_TOKENS_FILE) to require a bearer token for writes", config.host)


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name, or "" for every interface
        return False
