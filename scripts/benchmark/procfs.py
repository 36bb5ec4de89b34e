"""Where the bench's processes run, and what they spend: CPU affinity, and CPU time and resident memory
read from /proc."""

import contextlib
import os
import pathlib

SERVER_CPU, LOAD_CPU = 0, 1
PINNED = len(os.sched_getaffinity(0)) >= 2
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def on_cpu(cpu):
    """Processes and threads started inside run on ``cpu`` only: both inherit the affinity of the
    thread that starts them, through fork and through thread creation."""
    if not PINNED:
        yield
        return
    previous = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, previous)


def memory_bytes(pid, field):
    """``VmRSS`` (resident now) or ``VmHWM`` (the peak resident so far) of process ``pid``."""
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise SystemExit(f"no {field} for process {pid}")


def cpu_seconds(pid):
    """CPU time (user + system) that process ``pid`` and its children (a supervisor's workers) have used so
    far: those running, and those that ended and were waited for (counted in ``pid``'s cutime, cstime)."""
    fields = stat_fields(pid)
    ticks = sum(map(int, fields[11:15]))  # utime, stime, cutime, cstime
    for child in pathlib.Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            ticks += sum(map(int, stat_fields(child)[11:13]))
        except FileNotFoundError:  # ended since: once waited for, it is in the cutime above
            continue
    return ticks / CLOCK_TICKS


def stat_fields(pid):
    """The fields of /proc/PID/stat after the command's closing parenthesis (the command may hold spaces)."""
    return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
