"""tests/browser.py: inside shared(), the `with Browser()` blocks use one
Chromium process, and each block still starts as a fresh profile would (no
storage or cache of an earlier block's pages)."""
from __future__ import annotations

import os

import pytest

from tests import browser


def test_blocks_share_a_process_and_nothing_else(tmp_path):
    if not browser.available():
        if os.environ.get("CI"):
            pytest.fail(f"{browser.CHROMIUM} is missing (.ci/run installs Debian's chromium)")
        pytest.skip(f"{browser.CHROMIUM} not installed")
    page = tmp_path / "page.html"
    page.write_text("<html><body><script>document.title = String(localStorage.getItem('k'));"
                    "localStorage.setItem('k', 'set')</script></body></html>")
    seen = []
    with browser.shared():
        for width in (1280, 390):
            with browser.Browser(width=width) as b:
                first, again = b.open(page.as_uri()), b.open(page.as_uri())
                seen.append((first.evaluate("document.title"), again.evaluate("document.title"),
                             first.evaluate("window.innerWidth"), first.requests,
                             b._chromium._proc.pid))
    (title1, again1, width1, asked1, pid1), (title2, again2, width2, asked2, pid2) = seen
    assert (title1, again1) == ("null", "set")  # storage holds within a block
    assert (title2, again2) == ("null", "set"), "a block saw an earlier block's storage"
    assert (width1, width2) == (1280, 390)
    assert asked1 == asked2 == [page.as_uri()]  # each page's own requests only
    assert pid1 == pid2
