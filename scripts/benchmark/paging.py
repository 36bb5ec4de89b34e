"""Deep pages (issue 20): pages 42 (the last full one) and 43 (its last, 450 records) of ``limit=1000`` over
the 42,450 records, reached by their cursors, against page 1, on a fresh in-memory server; the deepest offset
still allowed beside them; and the offset of page 41 refused. Part of ./scripts/bench, or alone:

    .venv/bin/python -m scripts.benchmark.paging [--runs 3] [--seconds 5]
"""

import argparse
import json
import statistics

from .data import DATA_3MB, make_data_files
from .runners import wrk
from .servers import fresh_server, load, url

FIRST_PAGE = "/api/v1/growth?limit=1000"
DEEPEST_OFFSET = "/api/v1/growth?limit=1000&offset=10000"
REFUSED_OFFSET = "/api/v1/growth?limit=1000&offset=40000"
DEEP_PAGE = 43
CONNECTIONS = 10


def measure_paging(payload, runs, seconds):
    """req/s and latency of each page (medians of ``runs`` interleaved wrk runs), the deep page's ratio to
    the first in the same runs, and the answer to the refused offset."""
    with fresh_server() as server:
        load(server, payload)
        followed = [FIRST_PAGE]
        while len(followed) < DEEP_PAGE:
            followed.append(json.loads(server.request("GET", followed[-1])[1])["next"])
        pages = {"first": FIRST_PAGE, "page_42": followed[-2], "page_43": followed[-1], "offset_10000": DEEPEST_OFFSET}
        runs_of = {name: [] for name in pages}
        for _ in range(runs):  # interleaved, so that noise hits every page alike
            for name, path in pages.items():
                runs_of[name].append(wrk(url(server) + path, CONNECTIONS, seconds))
        status, body = server.request("GET", REFUSED_OFFSET)
    result = {"page_43_path": followed[-1], "refused_status": status, "refused_msg": json.loads(body)["msg"]}
    for name, values in runs_of.items():
        result.update({f"{name}_rps": statistics.median(v["rps"] for v in values),
                       f"{name}_p50_us": statistics.median(v["p50_us"] for v in values),
                       f"{name}_p99_us": statistics.median(v["p99_us"] for v in values),
                       f"{name}_errors": sum(v["errors"] for v in values),
                       f"{name}_ratio_to_first": statistics.median(
                           v["rps"] / f["rps"] for v, f in zip(values, runs_of["first"], strict=True))})
    return result


def paging_line(paging):
    # The refusal's message is in the results; the line says its status only (the page has a size cap).
    return (f"GET limit=1000 over 42,450 records, c={CONNECTIONS}: page 1 {paging['first_rps']:.0f} req/s "
            f"(p50 {paging['first_p50_us'] / 1000:.2f} ms); by cursor page 42 {paging['page_42_rps']:.0f} "
            f"({paging['page_42_ratio_to_first']:.2f} ×), page {DEEP_PAGE} (450 records) "
            f"{paging['page_43_rps']:.0f} ({paging['page_43_ratio_to_first']:.2f} ×); "
            f"offset=10000 {paging['offset_10000_rps']:.0f} ({paging['offset_10000_ratio_to_first']:.2f} ×); "
            f"offset=40000 answered {paging['refused_status']}")


def main():
    parser = argparse.ArgumentParser(prog="python -m scripts.benchmark.paging", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    make_data_files()
    print(paging_line(measure_paging(DATA_3MB.read_bytes(), args.runs, args.seconds)))


if __name__ == "__main__":
    main()
