"""mkdocs hooks (mkdocs.yml `hooks:`): the reference pages' generated sections.

A page's `<!-- reference:NAME -->` marker is replaced by the Markdown that
`pipeline.reference` makes from the code (CLI parsers, config validator,
metric registry, table schemas) before the page is converted, so the
generated headings get anchors and table-of-contents entries, and the strict
build checks their links like any other.
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from pipeline.reference import expand  # noqa: E402


def on_page_markdown(markdown, page, config, files):  # noqa: ARG001 - mkdocs' signature
    return expand(markdown)
