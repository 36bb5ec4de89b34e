"""Raw HTTP for the real-socket tests (tests/http/test_http_live.py, tests/http/test_server_connections_live.py): a
request head of given lines, and a record PUT through the live server's own client."""

RECORD = "/api/v1/growth/BRZ/NGDP_R/2002"
JSON = b"Content-Type: application/json"
HOST = b"Host: t"


def put_record(server):
    status, _ = server.request("PUT", RECORD, b'{"value": 1.5}', {"Content-Type": "application/json"})
    assert status in (200, 201)


def post_head(*lines, version=b"HTTP/1.1"):
    return b"POST /api/v1/growth " + version + b"\r\n" + b"".join(line + b"\r\n" for line in lines) + b"\r\n"
