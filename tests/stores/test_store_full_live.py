"""507 means the store is full, not that the queue is: one file posted again and again by 8 clients adds no
key after the first, so it is answered 202 while the queue has room and 503 with Retry-After when it
has not, never 507; on each store, against live servers."""

import json
import threading

import pytest

from scripts.generate_data import generate
from tests.helpers.support import two_workers_on_redis

CLIENTS = 8
POSTS_EACH = 6
# The file: 500 kB, 4,537 keys; the cap a little above it, the queue four files deep.
FILE_RECORDS = 4537
ENV = {"GROWTH_MAX_RECORDS": str(FILE_RECORDS + 100), "GROWTH_BULK_QUEUE_RECORDS": str(4 * FILE_RECORDS),
       "GROWTH_BULK_CHUNK_RECORDS": "500"}


@pytest.mark.serial  # a flood
@pytest.mark.parametrize("store", ["memory", "redis, 2 workers"])
def test_a_flood_of_one_file_from_8_clients_is_answered_only_202_and_503(servers, request, store):
    env = {} if store == "memory" else two_workers_on_redis(request)
    server = servers(**ENV, **env)
    body = json.dumps(generate(FILE_RECORDS, seed=7)).encode()
    answers = []

    def post_back_to_back():
        connection = server.connection(timeout=30)
        for _ in range(POSTS_EACH):
            connection.request("POST", "/api/v1/growth", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            answers.append((response.status, response.getheader("Retry-After"), json.loads(response.read())["msg"]))
            if response.getheader("Connection") == "close":
                connection.close()
                connection = server.connection(timeout=30)
        connection.close()

    threads = [threading.Thread(target=post_back_to_back) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(answers) == CLIENTS * POSTS_EACH
    assert {status for status, _, _ in answers} <= {202, 503}, sorted({(s, m[:60]) for s, _, m in answers})
    assert 202 in {status for status, _, _ in answers}
    assert all(retry_after == "1" for status, retry_after, _ in answers if status == 503)
    server.wait_until_complete()
    assert server.request_json("GET", "/api/v1/growth/size")[1] == {"size": FILE_RECORDS}
