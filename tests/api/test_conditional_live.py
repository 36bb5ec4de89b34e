"""What tests/api/test_conditional.py tests, as clients see it from real processes: clients racing with If-Match
lose no edit, a 304 goes over the socket with no body, a bulk job's Location answers across workers; a job
given up on by Redis reports failed."""

import json
import threading

from growth_gevent.stores.base import FAILED, JobStatus
from growth_gevent.testing import wait_for
from tests.helpers.api import RECORD_URL, SERIES_URL
from tests.helpers.redis_support import WAIT_SECONDS, open_store, queue_and_die, series_records

CLIENTS = 4
INCREMENTS = 25  # each client's: 100 read-modify-writes of one record, all together


def request(server, method, path, body=None, headers=None):
    """``(status, headers, body)`` of one request on a connection of its own."""
    connection = server.connection()
    try:
        data = None if body is None else json.dumps(body).encode()
        connection.request(method, path, body=data,
                           headers={"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        return response.status, {name.lower(): value for name, value in response.getheaders()}, response.read()
    finally:
        connection.close()


def test_of_two_clients_with_one_etag_one_writes_and_the_other_is_412(live):
    status, headers, _ = request(live, "PUT", RECORD_URL, {"value": 1})
    assert status == 201
    tag = headers["etag"]
    first = request(live, "PUT", RECORD_URL, {"value": 2}, {"If-Match": tag})
    second = request(live, "PUT", RECORD_URL, {"value": 3}, {"If-Match": tag})
    assert (first[0], second[0]) == (200, 412)
    assert json.loads(second[2]).keys() == {"msg"}
    assert json.loads(request(live, "GET", RECORD_URL)[2])["Value"] == 2


def test_clients_racing_with_if_match_lose_no_edit(live):
    """Each client adds 1 to the record, INCREMENTS times, by GET and a PUT with If-Match, again after a 412:
    every increment counts once, whichever worker answered."""
    assert request(live, "PUT", RECORD_URL, {"value": 0})[0] == 201
    refusals = []

    def increment():
        done = 0
        while done < INCREMENTS:
            _, headers, body = request(live, "GET", RECORD_URL)
            value = json.loads(body)["Value"]
            status = request(live, "PUT", RECORD_URL, {"Value": value + 1}, {"If-Match": headers["etag"]})[0]
            assert status in (200, 412), status
            done += status == 200
            refusals.append(status == 412)

    threads = [threading.Thread(target=increment) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert json.loads(request(live, "GET", RECORD_URL)[2])["Value"] == CLIENTS * INCREMENTS
    assert len(refusals) == CLIENTS * INCREMENTS + sum(refusals)


def test_a_304_goes_over_the_socket_with_no_body_and_the_connection_serves_on(live):
    request(live, "PUT", RECORD_URL, {"value": 1})
    connection = live.connection()
    try:
        for path in (RECORD_URL, SERIES_URL, "/api/v1/growth?format=csv", "/openapi.json"):
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            tag = response.getheader("ETag")
            for method in ("GET", "HEAD"):
                connection.request(method, path, headers={"If-None-Match": tag})
                response = connection.getresponse()
                assert (response.status, response.read(), response.getheader("ETag")) == (304, b"", tag), path
    finally:
        connection.close()


def test_the_bulk_location_answers_the_jobs_own_status(live, sample_records):
    status, headers, body = request(live, "POST", "/api/v1/growth", sample_records)
    assert (status, json.loads(body)) == (202, {"msg": "In progress"})
    job_url = headers["location"]
    assert job_url.startswith("/api/v1/growth/post/status/")

    def complete():
        answer = json.loads(request(live, "GET", job_url)[2])
        return answer if answer["msg"] == "complete" else None

    assert wait_for(complete, WAIT_SECONDS) == {"msg": "complete", "count": 9, "total": 9}


def test_a_job_given_up_on_reports_failed_with_the_records_it_applied(own_redis):
    """On a Redis of its own: the workers of the servers above may outlive them a moment, and apply the job."""
    job = queue_and_die(own_redis, series_records("A", 4))  # two chunks of two
    with own_redis.client() as direct:
        direct.lset(f"growth:job:{job}", 1, "[not JSON")
    store = open_store(own_redis)
    try:
        assert store.wait_idle(WAIT_SECONDS)
        assert store.job_status(job) == JobStatus(FAILED, 2, 4)
    finally:
        store.close()
