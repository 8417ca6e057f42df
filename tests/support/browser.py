"""Headless Chromium for browser tests: the Debian build at /usr/bin/chromium, driven by Playwright.

The machine's network is closed, so Chromium runs with every flag that stops it reaching outside
hosts, and a fresh profile each time. Without Playwright or Chromium the caller skips (a failure
under ``FINMCP_CI=1``: :func:`tests.support.postgres.require_or_skip`).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.postgres import require_or_skip

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium_context(width: int = 1280, height: int = 860) -> Iterator[Any]:
    """A Playwright browser context of headless Chromium with a fresh profile (closed on exit)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require_or_skip("playwright is not installed (the dev extra has it)")
    if not Path(CHROMIUM).is_file():
        require_or_skip(f"Chromium is not installed at {CHROMIUM} (apt-get install -y chromium)")
    profile = tempfile.mkdtemp(prefix="finmcp-chromium-")
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                args=FLAGS,
                headless=True,
                viewport={"width": width, "height": height},
            )
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
