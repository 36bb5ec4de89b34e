"""The process metrics of real workers: every scrape reports every live worker's, by pid."""

import os
import signal

from prometheus_client.parser import text_string_to_metric_families

from growth_gevent.testing import LISTENING, wait_for
from tests.helpers.processes import PROCESS_METRICS, worker_pids
from tests.helpers.support import two_workers_on_redis


def scrape(server):
    """One scrape (a new connection: any worker may answer it): the pids of process_* and growth_workers."""
    status, body = server.request("GET", "/metrics")
    assert status == 200
    families = {family.name: family for family in text_string_to_metric_families(body.decode())}
    pids = {name: sorted(int(sample.labels["pid"]) for sample in families[name.removesuffix("_total")].samples)
            for name in PROCESS_METRICS}
    return pids, families["growth_workers"].samples[0].value


def test_every_scrape_reports_the_process_of_every_live_worker_by_pid(servers, request):
    server = servers(**two_workers_on_redis(request))
    server.wait_for_line(LISTENING, 15)  # the second worker's
    live = sorted(worker_pids(server))
    for _ in range(10):
        assert scrape(server) == ({name: live for name in PROCESS_METRICS}, 2)

    dead = worker_pids(server, 0)[0]
    os.kill(dead, signal.SIGKILL)
    server.wait_for_line(r'worker=0 msg="listening on', 15)
    live = sorted([*worker_pids(server, 1), worker_pids(server, 0)[-1]])
    assert dead not in live
    wait_for(lambda: scrape(server) == ({name: live for name in PROCESS_METRICS}, 2), timeout=10)
    for _ in range(10):
        assert scrape(server) == ({name: live for name in PROCESS_METRICS}, 2)
