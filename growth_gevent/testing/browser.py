"""Debian's Chromium, headless, driven by Playwright: how tests/api/test_explore_live.py and
scripts/explore_first_load.py start it. Playwright comes from requirements-dev.txt, installed with
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1: the browser is the system's (``./scripts/test`` installs it), never one
Playwright would download. Not imported by ``growth_gevent.testing``'s ``__init__``: only what drives a
browser needs Playwright."""

import pathlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Playwright is imported where a browser is driven only
    from playwright.sync_api import Browser, Playwright

CHROMIUM = pathlib.Path("/usr/bin/chromium")
# No sandbox: tests run as root in CI; no GPU, QUIC or background traffic: nothing but the page's requests.
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync")


def launch_chromium(playwright: "Playwright") -> "Browser":
    """The system's Chromium, headless, from a started ``sync_playwright()``."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS))
