"""CORS for browser clients on other origins (off unless GROWTH_CORS_ORIGINS lists some): falcon's
middleware, which also answers preflights from each route's Allow header."""

import falcon

# Response headers that scripts of an allowed origin may read besides the CORS-safelisted ones.
EXPOSED_HEADERS = ("Retry-After", "X-Request-ID", "ETag", "X-Total-Count", "Link")


class CORS(falcon.CORSMiddleware):
    """falcon's CORS middleware, with ``Vary: Origin`` on every answer when only listed origins are
    allowed: the answer then depends on the Origin header, and a cache must not hand one origin's (or no
    origin's) answer to another."""

    def __init__(self, origins: tuple[str, ...]):
        super().__init__(allow_origins="*" if origins == ("*",) else origins, expose_headers=EXPOSED_HEADERS)

    def process_response(self, req: falcon.Request, resp: falcon.Response,
                         resource: object, req_succeeded: bool) -> None:
        super().process_response(req, resp, resource, req_succeeded)
        if self.allow_origins != "*":
            resp.append_header("Vary", "Origin")
