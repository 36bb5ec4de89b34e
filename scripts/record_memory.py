"""Resident memory of a live server (in-memory store) by records held: what GROWTH_MAX_RECORDS's default
is chosen from.

    .venv/bin/python scripts/record_memory.py [--blocks 25]

Each block is the generated dataset (scripts/generate_data.py, 42,450 records, the challenge's shape:
~25 years a series) with its countries renamed for the block, so that every block adds new records,
POSTed in bulk and applied; after each the server's VmRSS is read from /proc. With ``--sparse`` every
record is a series of its own (its year added to its indicator's name): the costliest shape short names
can make.
"""

import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from growth_gevent.testing import LiveServer  # noqa: E402 (after the path it is found on)
from scripts.generate_data import generate  # noqa: E402

BLOCK_RECORDS = 42450
MiB = 1024 * 1024


def rss_bytes(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise SystemExit(f"no VmRSS for process {pid}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=25)
    parser.add_argument("--sparse", action="store_true", help="every record a series of its own")
    args = parser.parse_args()
    records = generate(BLOCK_RECORDS, seed=2002)
    server = LiveServer(GROWTH_MAX_RECORDS=str(args.blocks * BLOCK_RECORDS), GROWTH_METRICS="off").start()
    try:
        base = rss_bytes(server.process.pid)
        print(f"{'records':>10}{'RSS MiB':>10}{'bytes/record':>14}")
        print(f"{0:>10}{base / MiB:>10.1f}{'':>14}")
        for block in range(args.blocks):
            body = json.dumps([{**record, "Country": f"{record['Country']}{block}",
                                "Indicator": record["Indicator"] + (f"_{record['Year']}" if args.sparse else "")}
                               for record in records])
            status, answer = server.request("POST", "/api/v1/growth", body.encode(),
                                            {"Content-Type": "application/json"})
            assert status == 202, answer
            server.wait_until_complete(timeout=120)
            held = (block + 1) * BLOCK_RECORDS
            rss = rss_bytes(server.process.pid)
            print(f"{held:>10}{rss / MiB:>10.1f}{(rss - base) / held:>14.0f}", flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
