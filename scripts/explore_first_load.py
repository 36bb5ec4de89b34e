"""The explore page's first load on loopback, in headless Chromium: requests, bytes, and the time from the
navigation's start to a drawn chart (the page marks ``body[data-drawn]``), the median of N loads, each in a
fresh browser context (nothing cached: cold) and then reloaded (revalidated by ETag: warm). The baseline,
in the same run and browser, is a fresh context's navigation to ``/ping`` (to its load event): what any page
costs here before it does anything.

    .venv/bin/python -m scripts.explore_first_load [N]    # N = 15 by default

Once on the 9 records of data/sample.json, once on the generated 42,450 (scripts/generate_data.py), each on
a server of its own (one process, the in-memory store).
"""

import json
import statistics
import sys

from playwright.sync_api import sync_playwright

from growth_gevent.testing import LiveServer
from growth_gevent.testing.browser import launch_chromium
from scripts.generate_data import generate

QUERY = "/explore?country=BRZ&indicator=NGDP_R&from=2000"
SAMPLE = "data/sample.json"
# Set on the first frame the page marks the chart drawn: the time since the navigation started.
DRAWN_AT = """new MutationObserver(() => { if (document.body.dataset.drawn !== undefined && !window.drawnAt)
  window.drawnAt = performance.now(); }).observe(document, {subtree: true, attributes: true,
  attributeFilter: ["data-drawn"]});"""
# What the page fetched: its navigation and every resource, as the browser counts them.
TRAFFIC = """() => { const entries = [performance.getEntriesByType("navigation")[0],
  ...performance.getEntriesByType("resource")];
  return {requests: entries.length, transferred: entries.reduce((sum, e) => sum + e.transferSize, 0),
    decoded: entries.reduce((sum, e) => sum + e.decodedBodySize, 0)}; }"""


def explore_load(browser, url, warm):
    context = browser.new_context()
    try:
        context.add_init_script(DRAWN_AT)
        page = context.new_page()
        page.goto(url)
        if warm:
            page.wait_for_function("() => window.drawnAt")
            page.reload()
        page.wait_for_function("() => window.drawnAt")
        return {**page.evaluate(TRAFFIC), "ms": page.evaluate("() => window.drawnAt")}
    finally:
        context.close()


def ping_load(browser, origin):
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(origin + "/ping")
        return page.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd")
    finally:
        context.close()


def measure(browser, label, records, runs):
    server = LiveServer().start()
    try:
        assert server.request_json("POST", "/api/v1/growth", records)[0] == 202
        server.wait_until_complete(timeout=120)
        origin = f"http://127.0.0.1:{server.port}"
        baseline = statistics.median(ping_load(browser, origin) for _ in range(runs))
        print(f"{label}: baseline, a fresh context's navigation to /ping: median {baseline:.1f} ms")
        for warm in (False, True):
            loads = [explore_load(browser, origin + QUERY, warm) for _ in range(runs)]
            median = statistics.median(load["ms"] for load in loads)
            last = loads[-1]
            print(f"{label}: {'warm (reload, 304s)' if warm else 'cold (fresh context)'}: {last['requests']} requests, "
                  f"{last['transferred']:,} B transferred ({last['decoded']:,} B decoded); drawn chart median "
                  f"{median:.1f} ms (min {min(load['ms'] for load in loads):.1f}, max "
                  f"{max(load['ms'] for load in loads):.1f}), {median / baseline:.2f}x the baseline")
    finally:
        server.stop()


def main(runs):
    with open(SAMPLE) as sample:
        datasets = [("sample, 9 records", json.load(sample)), ("generated, 42,450 records", generate(42450, 2002))]
    print(f"{runs} loads each of {QUERY}")
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            for label, records in datasets:
                measure(browser, label, records, runs)
        finally:
            browser.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
