"""The documentation site (docs/, mkdocs.yml): `mkdocs build --strict` passes
(a broken link or anchor in the Markdown is a warning, and strict makes it
fail), every internal link and anchor of the built pages resolves
(scripts/check_links.py, offline), and the README stays a short entrance
whose links all land."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

README_MAX_LINES = 200


def _load_checker():
    spec = importlib.util.spec_from_file_location(
        "check_links", os.path.join(ROOT, "scripts", "check_links.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_links = _load_checker()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("site"))
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", out],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_the_site_builds_strictly_with_every_page(site):
    for page in ("index.html", "getting-started/index.html", "concepts/verdicts/index.html",
                 "guides/migrating-ragas/index.html", "reference/config/index.html"):
        assert os.path.exists(os.path.join(site, page)), page


def test_every_internal_link_and_anchor_of_the_site_resolves(site):
    assert check_links.check_site(site) == []


def test_every_link_of_the_readme_resolves(site):
    assert check_links.check_readme(os.path.join(ROOT, "README.md"), site) == []


def test_the_readme_is_short():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        assert len(fh.read().splitlines()) <= README_MAX_LINES


def test_the_link_checker_finds_a_missing_page_and_a_missing_anchor(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "index.html").write_text('<h2 id="here">x</h2>', "utf-8")
    (tmp_path / "index.html").write_text(
        '<a href="a/#here">ok</a> <a href="a/#gone">anchor</a> <a href="b/">page</a>'
        ' <a href="https://example.org/x">external, not fetched</a> <a href="#top">self</a>'
        ' <img src="img/shot.png">', "utf-8")
    assert check_links.check_site(str(tmp_path)) == [
        "index.html: a/#gone: no anchor #gone", "index.html: b/: no such file",
        "index.html: #top: no anchor #top", "index.html: img/shot.png: no such file"]
    readme = tmp_path / "README.md"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n", "utf-8")
    readme.write_text("[ok](docs/a.md#here) [bad](docs/a.md#nope) [gone](docs/z.md)", "utf-8")
    assert check_links.check_readme(str(readme), str(tmp_path)) == [
        "README: docs/a.md#nope: no anchor #nope", "README: docs/z.md: no such file"]


def test_the_docs_quote_the_measured_validity_figures():
    """bench/validity.py rewrites them; a hand edit or a stale page fails here."""
    import json
    from bench.validity_report import DOCS_BEGIN, DOCS_END, DOCS_PAGE, docs_figures
    with open(os.path.join(ROOT, "validation", "results", "validity-after.json")) as fh:
        after = json.load(fh)
    with open(os.path.join(ROOT, DOCS_PAGE), encoding="utf-8") as fh:
        text = fh.read()
    block = text[text.index("\n", text.index(DOCS_BEGIN)) + 1:text.index(DOCS_END)]
    assert block.splitlines() == docs_figures(after)


def test_the_docs_name_only_verdict_presets_that_exist():
    """`--preset NAME`, `preset="NAME"` (Python API) and `verdict: {preset: NAME}` in
    the docs and README name a preset of transforms/decide/presets.py (NAME is a
    placeholder)."""
    import glob
    import re
    from transforms.decide.presets import PRESETS
    pattern = re.compile(r"--preset[ =]([a-z][a-z0-9_]*)|\bpreset=[\"']([^\"']+)[\"']"
                         r"|verdict:\s*\{\s*preset:\s*([a-z][a-z0-9_]*)")
    found = []
    for path in [os.path.join(ROOT, "README.md"),
                 *glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)]:
        with open(path, encoding="utf-8") as fh:
            for match in pattern.finditer(fh.read()):
                name = next(g for g in match.groups() if g)
                found.append((os.path.relpath(path, ROOT), name))
    assert len(found) >= 3
    assert [f for f in found if f[1] not in PRESETS] == []
