"""Checks the internal links of the built documentation site, offline.

    python scripts/check_links.py SITE_DIR [--readme README.md]

Every href and src of every built page that points inside the site must name
a file that exists, and its #fragment an id on that page; links to other
hosts are not fetched (the build machine has no internet). With --readme, the
README's relative links must name files of the repository, and a link to a
docs page's #fragment an id of that page in the built site. mkdocs --strict
already checks the links written in the Markdown; this also covers the
navigation, the theme's own links and the pages generated at build time.
Prints one line per broken link; exit 1 when there is any.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

LINK_ATTRS = {"a": "href", "link": "href", "img": "src", "script": "src", "iframe": "src"}


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for key in ("id", "name"):
            if values.get(key) and (key == "id" or tag == "a"):
                self.ids.add(values[key])
        url = values.get(LINK_ATTRS.get(tag, ""))
        if url:
            self.links.append(url)


def parse(path: str) -> _Page:
    page = _Page()
    with open(path, encoding="utf-8") as fh:
        page.feed(fh.read())
    return page


def _external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme or parts.netloc) or url.startswith(("mailto:", "data:", "//"))


def _target_file(site: str, page_path: str, url_path: str) -> str:
    """The file a relative (or site-absolute) URL path points to."""
    base = site if url_path.startswith("/") else os.path.dirname(page_path)
    target = os.path.normpath(os.path.join(base, unquote(url_path).lstrip("/")))
    if os.path.isdir(target):
        target = os.path.join(target, "index.html")
    return target


def check_site(site: str) -> list[str]:
    """Broken internal links of every HTML page under site, as messages."""
    site = os.path.abspath(site)
    pages: dict[str, _Page] = {}
    for folder, _, files in os.walk(site):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(folder, name)
                pages[path] = parse(path)
    problems = []
    for path, page in sorted(pages.items()):
        where = os.path.relpath(path, site)
        for url in page.links:
            if _external(url):
                continue
            parts = urlsplit(url)
            target = _target_file(site, path, parts.path) if parts.path else path
            if not os.path.exists(target):
                problems.append(f"{where}: {url}: no such file")
                continue
            if parts.fragment and target.endswith(".html"):
                ids = pages[target].ids if target in pages else parse(target).ids
                if unquote(parts.fragment) not in ids:
                    problems.append(f"{where}: {url}: no anchor #{parts.fragment}")
    return problems


def check_readme(readme: str, site: str) -> list[str]:
    """The README's relative links: files of the repository; fragments of docs
    pages are ids of the built page."""
    root = os.path.dirname(os.path.abspath(readme))
    with open(readme, encoding="utf-8") as fh:
        text = fh.read()
    problems = []
    for url in re.findall(r"\]\(([^)\s]+)\)", text):
        if _external(url) or url.startswith("#"):
            continue
        parts = urlsplit(url)
        path = os.path.normpath(os.path.join(root, unquote(parts.path)))
        if not os.path.exists(path):
            problems.append(f"README: {url}: no such file")
            continue
        rel = os.path.relpath(path, os.path.join(root, "docs"))
        if parts.fragment and rel.endswith(".md") and not rel.startswith(".."):
            stem = rel[:-3]
            built = os.path.join(site, "index.html" if stem == "index" else
                                 os.path.join(stem.removesuffix("/index"), "index.html"))
            if not os.path.exists(built) or parts.fragment not in parse(built).ids:
                problems.append(f"README: {url}: no anchor #{parts.fragment}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("site", help="the folder mkdocs built")
    ap.add_argument("--readme", help="also check this README's relative links")
    args = ap.parse_args(argv)
    problems = check_site(args.site)
    if args.readme:
        problems += check_readme(args.readme, args.site)
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
