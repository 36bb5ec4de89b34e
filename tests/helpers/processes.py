"""What the metrics and workers tests share: the process metrics, a scrape read as samples, the workers' pids."""

import re

from prometheus_client.parser import text_string_to_metric_families


def samples(client):
    response = client.get("/metrics")
    assert response.content_type == "text/plain"
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.text) for sample in family.samples}


PROCESS_METRICS = ("process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
                   "process_start_time_seconds", "process_open_fds", "process_max_fds")


def worker_pids(server, index=r"\d"):
    """The pids the supervisor logged for worker ``index`` (any worker by default), oldest first."""
    started = re.compile(rf"worker {index} started as pid (\d+)")
    return [int(match.group(1)) for match in map(started.search, server.lines) if match]
