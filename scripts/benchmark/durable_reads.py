"""What durable reads cost (issue 29): GET of one record (wrk, c=50) and k6's read/update mix (50 VUs, no
pause), both with ``GROWTH_FSYNC=always``, this tree against another checkout of the service (the code
before them), in interleaved rounds; medians and their ratios to the other tree's. Alone:

    git worktree add /tmp/base-reads af9d31d
    .venv/bin/python -m scripts.benchmark.durable_reads /tmp/base-reads [--rounds 6]
"""

import argparse
import contextlib
import statistics
import sys
import tempfile

from .data import ROOT
from .runners import k6, wrk
from .servers import RECORD_PATH, put_record, start, url

FIGURES = ("GET req/s", "GET p99 ms", "mix req/s", "mix p99 ms")


def service_in(tree):
    """The command that runs the service from the checkout ``tree``."""
    return (sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tree)!r}); "
                                  "from growth_gevent.__main__ import run; sys.exit(run())")


def measure_once(tree):
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as folder:
        server = start(stack, service_in(tree), GROWTH_SNAPSHOT=f"{folder}/growth.snapshot", GROWTH_FSYNC="always")
        put_record(server)
        get = wrk(url(server) + RECORD_PATH, 50, 5)
        mix = k6("read_update.js", url(server), ["-e", "SLEEP=0", "--duration", "8s"])
    return dict(zip(FIGURES, (get["rps"], get["p99_us"] / 1000, mix["rps"], mix["http_req_duration p(99)"]),
                    strict=True))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="a checkout of the code to compare with")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    trees = {"base": args.base, "this tree": ROOT}
    figures = {name: {figure: [] for figure in FIGURES} for name in trees}
    for round_ in range(args.rounds):
        for name in trees if round_ % 2 == 0 else reversed(trees):  # each starts half of the rounds
            for figure, value in measure_once(trees[name]).items():
                figures[name][figure].append(value)
            print(round_, name, {figure: round(values[-1], 1) for figure, values in figures[name].items()},
                  flush=True)
    base = {figure: statistics.median(values) for figure, values in figures["base"].items()}
    for name, measured in figures.items():
        print(f"{name:10s}", "  ".join(f"{figure} {statistics.median(values):8.1f} "
                                       f"({statistics.median(values) / base[figure]:.2f} ×)"
                                       for figure, values in measured.items()))


if __name__ == "__main__":
    main()
