"""What every error answer shares, whoever writes it (falcon's error serializer or the HTTP server):
the ``{"msg": ...}`` body and the ``Retry-After`` a client is told."""

import ujson

# What a client is told to wait before retrying a request refused for want of room now.
RETRY_AFTER_SECONDS = 1


def message_body(message: str) -> bytes:
    """The JSON body of an error: ``{"msg": message}``, as the challenge answers."""
    return ujson.dumps({"msg": message}, escape_forward_slashes=False).encode()
