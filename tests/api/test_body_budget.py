"""The body budgets (growth_gevent/api/body_budget.py), in-process: GROWTH_BODY_BUFFER_BYTES split into bulk
bodies and a reserve for PUT bodies, one client address held to its share of each, every charge given back
however its request ends. The same against a live server's socket: test_body_budget_live.py."""

import io
import json

import falcon
import falcon.testing
import gevent
import pytest
from gevent.event import Event

from growth_gevent.api.app import create_app
from growth_gevent.api.body_budget import split_budgets
from growth_gevent.config import Config
from growth_gevent.http.bodies import SizedBody
from tests.helpers.support import memory_store

KiB = 1024
MiB = 1024 * KiB
ATTACKER, VICTIM = "192.0.2.66", "192.0.2.1"
SENT = 32 * KiB  # what each slow upload has sent when it stalls
ALL_BODIES = {"msg": "too many request bodies in memory; retry later"}
CLIENT_BODIES = {"msg": "too many request bodies in memory from this client address; retry later"}


def records(count):
    return [{"Country": "A", "Indicator": "B", "Value": 1.5, "Year": year} for year in range(count)]


SMALL_BULK = json.dumps(records(10)).encode()
EIGHT_MIB_BODY = b"[" + b" " * (8 * MiB - 2) + b"]"


class Stalling:
    """A ``wsgi.input`` whose client sent ``sent`` bytes and then nothing until ``release`` is set; or one
    that went away (``fail``). ``reading`` is set once its reader waits on it."""

    def __init__(self, body, sent=0, fail=False):
        self._body = memoryview(body)
        self._at = 0
        self._sent = sent
        self._fail = fail
        self.release = Event()
        self.reading = Event()

    def read(self, size=-1):
        if self._sent:
            size = min(size, self._sent)
            self._sent -= size
        else:
            self.reading.set()
            self.release.wait()
            if self._fail:
                raise ConnectionResetError("client went away")
        data = bytes(self._body[self._at:self._at + size])
        self._at += len(data)
        return data

    def hang_up(self):
        self._fail = True
        self.release.set()


def call(app, body, wsgi_input=None, path="/api/v1/growth", method="POST", client=VICTIM):
    """``(status, headers, body)`` of one request to the WSGI ``app`` from address ``client``, whose body may
    come from ``wsgi_input``."""
    environ = falcon.testing.create_environ(path, method=method, body=body, remote_addr=client,
                                            headers={"Content-Type": "application/json"})
    if wsgi_input is not None:
        environ["wsgi.input"] = wsgi_input
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer.update(status=int(status.split()[0]), headers={name.lower(): value for name, value in headers})

    data = b"".join(app(environ, start_response))
    return answer["status"], answer["headers"], json.loads(data)


def put(app, client=VICTIM, body=b'{"value": 1.5}', wsgi_input=None):
    return call(app, body, wsgi_input, "/api/v1/growth/A/B/2002", "PUT", client)


@pytest.fixture
def app(request):
    """An app of 1 MiB of bodies: 960 KiB for bulk bodies, 64 KiB for PUT bodies; ``Config`` settings from
    the test's parameter."""
    store = memory_store()
    yield create_app(store, Config(body_buffer_bytes=1 * MiB, **getattr(request, "param", {})))
    store.close()


class SlowUploads:
    """Bulk POSTs (or PUTs, ``path`` and ``method``) from ``client`` that each sent SENT bytes of a body
    declared 8 MiB, then stall; as many as ``count``, or until one is refused (then ``refusal`` is its answer).
    ``end()``: their clients go away, and every charge is given back."""

    def __init__(self, app, client, count, path="/api/v1/growth", method="POST", sent=SENT):
        self.inputs, self.calls, self.refusal = [], [], None
        for _ in range(count):
            stalling = Stalling(EIGHT_MIB_BODY, sent)
            answer = gevent.spawn(call, app, b"", stalling, path, method, client)
            gevent.wait([answer], timeout=0)
            gevent.idle()
            if answer.ready():
                self.refusal = answer.get()
                return
            self.inputs.append(stalling)
            self.calls.append(answer)

    def end(self):
        for stalling in self.inputs:
            stalling.hang_up()
        for answer in self.calls:
            answer.get(timeout=10)


def test_a_sixteenth_is_kept_for_put_bodies_and_a_client_holds_its_percent_of_each():
    bulk, record = split_budgets(64 * MiB, 25)
    assert (bulk.limit, bulk.client_limit, record.limit, record.client_limit) == (60 * MiB, 15 * MiB, 4 * MiB, MiB)


def test_a_client_address_holds_its_share_and_another_address_still_writes_at_once(app):
    uploads = SlowUploads(app, ATTACKER, 100)
    status, headers, body = uploads.refusal
    assert (status, body) == (503, CLIENT_BODIES)
    assert (headers["retry-after"], headers["connection"]) == ("1", "close")
    assert len(uploads.inputs) == 960 * KiB // 4 // SENT  # 7 hold 224 KiB of the attacker's 240 KiB
    assert put(app)[0] == 201
    assert call(app, SMALL_BULK)[0] == 202
    assert put(app, ATTACKER)[0] == 200  # PUT bodies have their own budget, the attacker's share of it too
    uploads.end()
    assert call(app, SMALL_BULK, client=ATTACKER)[0] == 202  # given back


@pytest.mark.parametrize("app", [{"body_buffer_client_percent": 100}], indirect=True)
def test_bulk_bodies_that_fill_their_budget_leave_put_bodies_theirs(app):
    uploads = [SlowUploads(app, ATTACKER, 29), SlowUploads(app, ATTACKER, 1, sent=SENT - 100)]  # 100 bytes left
    assert call(app, SMALL_BULK, client=VICTIM)[::2] == (503, ALL_BODIES)
    assert put(app)[0] == 201
    assert [each.refusal for each in uploads] == [None, None]
    for each in uploads:
        each.end()


def test_put_bodies_of_one_address_hold_its_share_of_their_budget(app):
    uploads = SlowUploads(app, ATTACKER, 100, "/api/v1/growth/A/B/1", "PUT", sent=1000)  # a PUT body's most: 1,026
    assert uploads.refusal[::2] == (503, CLIENT_BODIES)
    assert len(uploads.inputs) == 64 * KiB // 4 // 1000
    assert put(app)[0] == 201
    uploads.end()


@pytest.mark.parametrize("path, method, part", [("/api/v1/growth", "POST", 960 * KiB),
                                                ("/api/v1/growth/A/B/1", "PUT", 64 * KiB)])
def test_five_addresses_that_hold_all_they_may_leave_a_quarter_of_each_budget_to_the_others(app, path, method,
                                                                                            part):
    # Each takes a quarter of what the others left it (a fixed quarter let four take everything):
    # 1 - (3/4)**5 of the part, 76 %, in bodies of a 64th of it.
    sent = part // 64 if method == "POST" else 1000
    holders = [SlowUploads(app, f"192.0.2.{10 + index}", 100, path, method, sent) for index in range(5)]
    assert all(each.refusal[::2] == (503, CLIENT_BODIES) for each in holders)
    held = sum(len(each.inputs) for each in holders) * sent
    assert 0.70 * part < held <= (1 - 0.75 ** 5) * part
    assert put(app)[0] == 201
    assert call(app, SMALL_BULK)[0] == 202
    for each in holders:
        each.end()


def put_whole(app, client=VICTIM, size=1000):
    """``put`` of a body of ``size`` bytes that came whole with its head, as the server hands it over (its
    ``SizedBody``): read at once, and not charged while nothing is held (api/body_reader.py)."""
    body = b'{"value": 2.5}'.ljust(size)
    return put(app, client, body, SizedBody(io.BufferedReader(io.BytesIO(body)), len(body), MiB, None, arrived=True))


def test_a_put_body_that_came_whole_with_its_head_is_held_to_the_budgets_rules_as_any(app):
    assert put_whole(app)[0] == 201
    uploads = SlowUploads(app, ATTACKER, 100, "/api/v1/growth/A/B/1", "PUT", sent=1000)
    assert uploads.refusal[::2] == (503, CLIENT_BODIES)
    assert put_whole(app, ATTACKER)[::2] == (503, CLIENT_BODIES)
    assert put_whole(app)[0] == 200  # charged, as it fits
    uploads.end()
    assert put_whole(app, ATTACKER)[0] == 200
    assert_nothing_held(app)


def test_a_put_body_that_came_whole_and_is_larger_than_a_client_may_hold_is_413():
    store = memory_store()
    app = create_app(store, Config(body_buffer_bytes=16 * KiB))  # 1 KiB for PUT bodies, 256 bytes a client
    status, _, body = put_whole(app, size=300)
    assert (status, body) == (413, {"msg": "request body is larger than 256 bytes"})
    store.close()


def test_the_addresses_of_one_ipv6_64_are_one_client():
    store = memory_store()
    app = create_app(store, Config(body_buffer_bytes=1 * MiB))
    holder = SlowUploads(app, "2001:db8:0:1::1", 100, sent=30 * KiB)  # 8 hold all of its 240 KiB
    assert holder.refusal[::2] == (503, CLIENT_BODIES)
    assert call(app, SMALL_BULK, client="2001:db8:0:1:ffff::2")[::2] == (503, CLIENT_BODIES)  # the same /64
    assert call(app, SMALL_BULK, client="2001:db8:0:2::1")[0] == 202  # the next /64: another client
    holder.end()
    store.close()


def test_a_body_larger_than_one_address_may_hold_is_413():
    store = memory_store()
    app = create_app(store, Config(max_body_bytes=1000, body_buffer_bytes=1600))  # 375 bytes a client
    status, _, body = call(app, b"[" + b" " * 400 + b"]")
    assert (status, body) == (413, {"msg": "request body is larger than 375 bytes"})
    store.close()


@pytest.mark.parametrize("path, method", [("/api/v1/growth", "POST"), ("/api/v1/growth/A/B/1", "PUT")])
def test_the_charge_is_given_back_when_the_client_goes_away(app, path, method):
    gone = Stalling(SMALL_BULK, 10, fail=True)
    gone.release.set()
    status, _, body = call(app, SMALL_BULK, gone, path, method)
    assert (status, body) == (400, {"msg": "request body could not be read"})
    assert_nothing_held(app)


@pytest.mark.parametrize("body", [b"[01]", b"{]", json.dumps([{"Country": "."}]).encode()])
def test_the_charge_is_given_back_after_a_refused_body(app, body):
    assert call(app, body)[0] in (400, 422)
    assert_nothing_held(app)


def assert_nothing_held(app):
    """Every budget is back to nothing held: a body of the whole of one address's share fits."""
    status, _, body = call(app, b"[" + b" " * (240 * KiB - 3) + b"]")  # read whole: a charge left would be 503
    assert status == 202, body
