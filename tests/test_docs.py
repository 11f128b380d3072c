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


CONFIG_KEYS = {"bots", "cache", "classifier", "custom_metrics", "embeddings", "endpoints",
               "gate", "input", "judge", "metric_options", "metrics", "verdict"}


def _doc_pages() -> list[str]:
    import glob
    return [os.path.join(ROOT, "README.md"),
            *sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))]


def code_blocks(text: str, languages: tuple[str, ...]) -> list[tuple[int, str]]:
    """(line, body) of every fenced block in one of `languages` ("" for a bare
    ```), indented ones (in a list or an admonition) included."""
    import re
    import textwrap
    fence = re.compile(r"^( *)```([a-z]*)[ \t]*\n(.*?)^\1```", re.S | re.M)
    return [(text[:m.start()].count("\n") + 1, textwrap.dedent(m.group(3)))
            for m in fence.finditer(text) if m.group(2) in languages]


def _yaml_blocks(text: str) -> list[tuple[int, str]]:
    return code_blocks(text, ("yaml", "yml"))


def config_block_problem(body: str) -> str | None:
    """Why a YAML block of the docs is not a valid evalbeam config (None: it is,
    or it is no config: a CI workflow, a Kubernetes manifest). A block may be a
    fragment: an endpoint its judge, classifier or embeddings name without
    defining it stands in as a placeholder. Every metric it names (metrics:,
    verdict and gate rules, metric_options) must be a built-in metric, a group,
    the verdict / pass rate, or one of its own custom metrics or rubrics."""
    import yaml
    from pipeline.config import parse_config
    from transforms.score.scoring import GROUPS, METRIC_NAMES, RESERVED
    data = yaml.safe_load(body)
    if not isinstance(data, dict) or not set(data) <= CONFIG_KEYS:
        return None
    endpoints = dict(data.get("endpoints") or {})
    for section in ("judge", "classifier", "embeddings"):
        name = (data.get(section) or {}).get("endpoint")
        if name and name not in endpoints:
            endpoints[name] = {"base_url": "http://127.0.0.1:1"}
    try:
        cfg = parse_config({**data, "endpoints": endpoints} if endpoints else data)
    except ValueError as exc:
        return str(exc)
    known = (set(METRIC_NAMES) | set(GROUPS) | set(RESERVED) | set(cfg.judge.rubrics)
             | {m.name for m in cfg.custom_metrics})
    named = [*(cfg.metrics or ()), *(r.metric for r in cfg.verdict.rules),
             *(g.metric for g in cfg.gate), *cfg.metric_options]
    unknown = [m for m in named if m not in known]
    return f"unknown metric {unknown[0]!r}" if unknown else None


def test_every_config_block_of_the_docs_is_a_valid_config():
    """Each ```yaml block of the README and the docs that is an evalbeam config
    (or a fragment of one) parses with parse_config and names real metrics."""
    checked, problems = 0, []
    for path in _doc_pages():
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        for line, body in _yaml_blocks(text):
            checked += 1
            problem = config_block_problem(body)
            if problem:
                problems.append(f"{os.path.relpath(path, ROOT)}:{line}: {problem}")
    assert checked >= 20
    assert problems == []


@pytest.mark.parametrize("body, problem", [
    ("metrics: [rouge_l]\n", "unknown metric 'rouge_l'"),
    ("verdict:\n  rules:\n    - {metric: faithfulnes, below: 0.5, verdict: FAIL}\n",
     "unknown metric 'faithfulnes'"),
    ("gate:\n  - {metric: pass_rate, max_dorp: 0.02}\n", "unknown key"),
    ("judge: {endpoint: llm, model: m, rubrics: {tone: {criteria: c}}}\nmetrics: [tone]\n", None),
    ("name: evaluation\non:\n  pull_request:\njobs: {}\n", None),
])
def test_the_config_block_check_finds_a_bad_key_and_a_misspelt_metric(body, problem):
    found = config_block_problem(body)
    assert (found is None) if problem is None else (problem in found)


def test_every_metrics_flag_of_the_docs_names_real_metrics():
    """`--metrics x,y` on a command line of the docs names metrics or groups (one
    letter is a placeholder)."""
    import re
    from transforms.score.scoring import GROUPS, METRIC_NAMES
    found = []
    for path in _doc_pages():
        with open(path, encoding="utf-8") as fh:
            for match in re.finditer(r"--metrics[ =]([A-Za-z0-9_,]+)", fh.read()):
                found += [(os.path.relpath(path, ROOT), m) for m in match.group(1).split(",")
                          if len(m) > 1]
    assert len(found) >= 3
    assert [f for f in found if f[1] not in set(METRIC_NAMES) | set(GROUPS)] == []


def repeated_passages(text: str, words: int = 8, within: int = 2) -> list[tuple[int, str]]:
    """(line, passage) of every run of `words` words of the prose that the same
    run, ending no more than `within` lines earlier, already said: text an
    edit left behind (a sentence pasted twice, a line kept beside its
    rewrite). Code blocks and `code spans` are left out (a command or an
    error message quoted after the prose that says it is no repetition)."""
    import re

    def blank(match: re.Match) -> str:  # keeps the line numbers
        return "\n" * match.group(0).count("\n")

    fence = re.compile(r"^( *)```.*?^\1```", re.S | re.M)
    prose = re.sub(r"``.+?``|`[^`]+`", blank, fence.sub(blank, text), flags=re.S)
    tokens, line, at = [], 1, 0
    for m in re.finditer(r"[\w'’-]+", prose):
        line += prose.count("\n", at, m.start())
        at = m.start()
        tokens.append((m.group(0).lower(), line))
    seen: dict[tuple[str, ...], tuple[int, int]] = {}
    found = []
    for i in range(len(tokens) - words + 1):
        key = tuple(t for t, _ in tokens[i:i + words])
        here = tokens[i][1]
        if key in seen:
            j, first = seen[key]
            if i - j >= words and 0 < here - first <= within:
                found.append((here, " ".join(key)))
        else:
            seen[key] = (i, here)
    return found


def test_no_page_repeats_a_passage_an_edit_left_behind():
    """A sentence an edit left twice (guides/cost-control.md had "A re-run of
    the id (a new attempt, a new tally) asks" on two lines in a row)."""
    found = []
    for path in _doc_pages():
        with open(path, encoding="utf-8") as fh:
            found += [f"{os.path.relpath(path, ROOT)}:{line}: {passage}"
                      for line, passage in repeated_passages(fh.read())[:1]]
    assert found == []


def test_the_repetition_check_finds_a_pasted_line_and_passes_quotes_and_code():
    pasted = ("by that share's unused part. A re-run of the id (a new attempt, a new tally) asks\n"
              "A re-run of the id (a new attempt, a new tally) asks\n"
              "what the cap refused.\n")
    assert repeated_passages(pasted)[0] == (2, "a re-run of the id a new attempt")
    quoted = ("or no metric has a value for any labelled answer (every answer a bot error: `no\n"
              "suggested rules: no metric has a value for any labelled answer (every one is\n"
              "null`).\n")
    code = ("Run it:\n\n```bash\nevalbeam run --input cases.jsonl --output out --config a.yaml\n"
            "evalbeam run --input cases.jsonl --output out --config a.yaml --run-id b\n```\n")
    far = "one two three four five six seven eight.\n" + "x.\n" * 5 + \
          "one two three four five six seven eight.\n"
    assert repeated_passages(quoted) == repeated_passages(code) == repeated_passages(far) == []
