import time

import gevent
import gevent.socket
from gevent.server import StreamServer

from growth_gevent.stores.base import COMPLETE, IDLE, IN_PROGRESS, BulkStatus
from growth_gevent.stores.memory.applier import BulkApplier


def test_jobs_are_applied_in_order_in_chunks_that_yield():
    applied = []
    applier = BulkApplier(applied.append, chunk_size=2)
    applier.submit([1, 2, 3])
    applier.submit([4])
    assert applier.status() == BulkStatus(IN_PROGRESS, 0, 1, 2, 0, records_waiting=4)
    assert applier.wait_idle(5)
    assert applied == [[1, 2], [3], [4]]
    assert applier.status() == BulkStatus(COMPLETE, 1, 1, 2, 2, records_applied=4)


def test_other_greenlets_run_between_chunks():
    events = []
    applier = BulkApplier(lambda chunk: events.append("chunk"), chunk_size=1)
    applier.submit(list(range(3)))
    gevent.spawn(events.append, "reader")
    assert applier.wait_idle(5)
    assert events.index("reader") < len(events) - 1


def test_status_is_idle_before_any_job_and_wait_idle_returns_at_once():
    applier = BulkApplier(lambda chunk: None, chunk_size=2)
    assert applier.status() == BulkStatus(IDLE, 0, 0, 0, 0)
    assert applier.wait_idle(0)


def test_wait_idle_times_out_while_a_job_is_blocked():
    gate = gevent.event.Event()
    applier = BulkApplier(lambda chunk: gate.wait(), chunk_size=2)
    applier.submit([1])
    assert not applier.wait_idle(0.01)
    gate.set()
    assert applier.wait_idle(5)
    applier.close()


def test_records_waiting_counts_accepted_records_not_yet_applied():
    gate = gevent.event.Event()
    applier = BulkApplier(lambda chunk: gate.wait(), chunk_size=2)
    applier.submit([1, 2, 3])
    applier.submit([4])
    assert applier.records_waiting() == 4
    gevent.sleep(0)  # the worker takes the first chunk and blocks applying it
    assert applier.records_waiting() == 4
    gate.set()
    assert applier.wait_idle(5)
    assert (applier.records_waiting(), applier.status().records_waiting) == (0, 0)


def test_a_job_given_up_on_counts_as_done_for_the_state():
    assert BulkStatus.of(0, 5, 2, 1, 5, jobs_failed=1).state == COMPLETE
    assert BulkStatus.of(0, 5, 3, 1, 5, jobs_failed=1).state == IN_PROGRESS


def test_a_client_waiting_on_a_socket_is_served_between_chunks():
    def serve(sock, address):
        sock.recv(1)
        sock.sendall(b"x")
        sock.close()

    server = StreamServer(("127.0.0.1", 0), serve)
    server.start()

    def busy_chunk(chunk):  # CPU-bound like a real chunk: no I/O, no yield inside
        started = time.perf_counter()
        while time.perf_counter() - started < 0.002:
            pass

    applier = BulkApplier(busy_chunk, chunk_size=1)
    applier.submit(list(range(30)))  # ~60 ms of work

    def ask():
        with gevent.socket.socket() as sock:
            sock.connect(server.address)  # no name to resolve: a resolver thread would wait on the GIL
            sock.sendall(b"?")
            return sock.recv(1), applier.records_waiting()

    answer, waiting = gevent.spawn(ask).get(timeout=5)
    assert answer == b"x" and waiting > 20  # answered within the first few chunks, not after all of them
    assert applier.wait_idle(5)
    server.stop()
