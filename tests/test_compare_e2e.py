"""End to end: three pipeline runs with a (scripted) judge, then `evalbeam
compare` and its gate, its table read back with DuckDB, and the HTML pages
opened in headless Chromium as a person would.

r1 and r2 evaluate the same cases (r2's judge calls come from the call
cache); r3's `recorded` answers are degraded in 10% of the cases (an answer
with an injected <script> and invented numbers), two cases are gone and one
is new.
"""
from __future__ import annotations

import json
import os

import duckdb
import pytest

from pipeline.cli import run
from tests import browser
from tests.conftest import write_cases
from tests.fake_server import FakeOpenAI
from tests.judge_script import ScriptedJudge
from tests.pipeline_helpers import run_cli

N = 100
DEGRADED = range(0, N, 10)            # every tenth case of the `recorded` bot
PAYLOAD = ("<script>window.__pwned = 1; document.title = 'PWNED'</script>"
           "<img src=x onerror=\"window.__pwned = 2\">")
KEY = "sk-compare-judge-key"
SUITES = ("shipping", "billing", "returns", "accounts")
TEMPLATES = {  # question, context, answer
    "shipping": ("How many days does delivery to region {i} take?",
                 "Delivery to region {i} takes {d} business days and costs {p} dollars.",
                 "Delivery to region {i} takes {d} business days."),
    "billing": ("What does plan {i} cost per month?",
                "Plan {i} costs {p} dollars per month, billed monthly.",
                "Plan {i} costs {p} dollars per month."),
    "returns": ("How long is the return window for product {i}?",
                "Product {i} can be returned within {d} days of delivery.",
                "Product {i} can be returned within {d} days of delivery."),
    "accounts": ("How many users can account tier {i} have?",
                 "Account tier {i} allows {d} users and {p} projects.",
                 "Account tier {i} allows {d} users."),
}


def _case(i: int) -> dict:
    suite = SUITES[i % len(SUITES)]
    q, ctx, ans = TEMPLATES[suite]
    values = {"i": i, "d": 3 + i % 9, "p": 10 + i}
    return {"case_id": f"case-{i:03d}", "question": q.format(**values),
            "contexts": [ctx.format(**values)], "expected_answer": ans.format(**values),
            "answer": ans.format(**values), "suite": suite}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """r1, r2 (same inputs, judge from the cache) and r3 (degraded) in one folder."""
    tmp = tmp_path_factory.mktemp("compare")
    rows = [_case(i) for i in range(N)]
    degraded = [dict(r, answer=f"{PAYLOAD} Our office cat Biscuit costs 999 dollars.")
                if i in DEGRADED else r for i, r in enumerate(rows)]
    degraded = degraded[:-2] + [_case(N)]  # two cases gone, one new
    same = write_cases(str(tmp / "cases.parquet"), rows)
    worse = write_cases(str(tmp / "degraded.parquet"), degraded)
    write_cases(str(tmp / "faq.parquet"), [{"question": r["question"], "answer": r["answer"]}
                                           for r in rows[:60]])
    out = str(tmp / "out")
    os.environ["COMPARE_JUDGE_KEY"] = KEY
    with FakeOpenAI(api_key=KEY) as server:
        server.set_chat_handler(ScriptedJudge())
        cfg = tmp / "config.yaml"
        cfg.write_text(
            f"endpoints:\n  judge: {{base_url: '{server.openai_base_url}', "
            "api_key_env: COMPARE_JUDGE_KEY, requests_per_second: 1000, max_concurrency: 16}\n"
            "judge: {endpoint: judge, model: judge-model}\n"
            "bots:\n  - {name: faq, type: faq_match, faq: faq.parquet}\n"
            "  - {name: recorded, type: precomputed}\n"
            "metrics: [faithfulness, keyword_recall, rougeL, completeness, lexical_relevance, "
            "hallucination, exact_match]\n"
            # the verdict this test's pass_rate transitions count (not the default
            # preset's, which decides grounding by groundedness, not computed here)
            "verdict:\n  rules:\n    - {metric: hallucination, above: 0.7, verdict: FAIL}\n"
            "gate:\n  - {metric: faithfulness, max_drop: 0.02}\n"
            "  - {metric: pass_rate, max_drop: 0.05, bot: recorded}\n")
        for run_id, date, cases in (("r1", "2026-11-18", same), ("r2", "2026-11-19", same),
                                    ("r3", "2026-11-20", worse)):
            assert run_cli("--input", cases, "--output", out, "--config", str(cfg),
                           "--run-id", run_id, "--run-date", date) == 0
            if run_id == "r1":
                first = server.stats()["by_path"]["/v1/chat/completions"]
            if run_id == "r2":  # the second run's judge answered from the cache
                assert server.stats()["by_path"]["/v1/chat/completions"] == first
    return out, str(cfg)


def compare(out: str, baseline: str, candidate: str, *extra: str) -> int:
    from pipeline.cli import run
    return run(["compare", "--output", out, "--baseline", baseline, "--candidate", candidate,
                *extra])


def comparisons(out: str, where: str) -> dict[tuple, dict]:
    """comparisons/ read back as a warehouse reads it."""
    con = duckdb.connect()
    cur = con.execute(f"SELECT * FROM read_parquet('{out}/comparisons/**/*.parquet', "
                      f"hive_partitioning=true) WHERE {where}")
    names = [d[0] for d in cur.description]
    return {(r["bot"], r["suite"], r["metric"]): r for r in (dict(zip(names, row))
                                                             for row in cur.fetchall())}


def test_same_inputs_compare_with_no_significant_difference(runs, capsys):
    out, cfg = runs
    assert compare(out, "r1", "r2", "--config", cfg) == 0
    printed = capsys.readouterr().out
    assert "gate: passed (2 rules" in printed and "significantly worse: none" in printed
    rows = comparisons(out, "run_id = 'r2' AND baseline_run_id = 'r1'")
    assert {str(r["run_date"]) for r in rows.values()} == {"2026-11-19"}
    assert not any(r["significant"] for r in rows.values())
    assert all(r["delta"] == 0 and r["losses"] == 0 for r in rows.values() if r["n_pairs"])
    faith = rows[("recorded", "*", "faithfulness")]
    assert faith["n_pairs"] == N and faith["test"] == "mcnemar" and faith["p_value"] == 1.0
    assert rows[("faq", "*", "rougeL")]["test"] == "wilcoxon"  # recorded: all 1.0, so 0/1
    assert rows[("faq", "shipping", "pass_rate")]["n_pairs"] == N // 4
    assert {r["only_in_baseline"] + r["only_in_candidate"] for r in rows.values()} == {0}


def test_summary_has_intervals_around_every_mean(runs):
    out, _ = runs
    rows = duckdb.connect().execute(
        f"SELECT metric, suite, count, mean, ci_low, ci_high FROM read_parquet("
        f"'{out}/summary/**/*.parquet', hive_partitioning=true) WHERE run_id = 'r3'").fetchall()
    assert rows and all(lo <= mean <= hi for _, _, n, mean, lo, hi in rows if n > 1)
    assert all(lo is None for _, _, n, _, lo, _ in rows if n < 2)
    verdicts = [r for r in rows if r[0] == "verdict" and r[1] == "*"]
    assert len(verdicts) == 2 and all(0 <= r[4] < r[5] <= 1 for r in verdicts)


def test_degraded_candidate_fails_the_gate(runs, capsys):
    out, cfg = runs
    assert compare(out, "r1", "r3", "--config", cfg) == 4
    printed = capsys.readouterr().out
    assert "gate: FAILED gate[0] {metric: faithfulness, max_drop: 0.02}: recorded faithfulness" \
        in printed
    rows = comparisons(out, "run_id = 'r3' AND baseline_run_id = 'r1'")
    faith = rows[("recorded", "*", "faithfulness")]
    assert faith["n_pairs"] == N - 2 and faith["significant"] and faith["p_adjusted"] < 0.05
    assert faith["delta"] == pytest.approx(-0.1, abs=0.011) and faith["ci_high"] < 0
    assert faith["ci_low"] <= faith["delta"] <= faith["ci_high"]
    assert faith["losses"] == len(DEGRADED) and faith["wins"] == 0
    assert (faith["only_in_baseline"], faith["only_in_candidate"]) == (2, 1)
    passes = rows[("recorded", "*", "pass_rate")]
    assert json.loads(passes["transitions"])["PASS->FAIL"] == len(DEGRADED)
    assert passes["significant"] and passes["test"] == "mcnemar"
    # the faq bot's answers did not change; its lexical_relevance may (the IDF
    # is computed over each run's corpus, and r3's corpus lost and gained cases)
    assert not any(r["significant"] for (bot, _, metric), r in rows.items()
                   if bot == "faq" and metric != "lexical_relevance")
    pages = os.path.join(out, "runs", "r3", "compare")
    md = open(os.path.join(pages, "r1.md"), encoding="utf-8").read()
    assert "**FAIL** gate[0]" in md and "Biscuit" in md and "<script>" not in md
    assert "case-099" in md and "case-100" in md  # unpaired cases are listed
    with open(os.path.join(pages, "r1.unpaired.csv"), encoding="utf-8") as fh:
        assert len(fh.read().strip().splitlines()) == 1 + 2 * 3  # 2 bots × (2 gone + 1 new)


def test_bot_against_bot_in_one_run(runs, capsys):
    out, _ = runs
    assert compare(out, "r1:faq", "r1:recorded") == 0
    assert "compare r1:recorded (candidate) vs r1:faq (baseline): 100 paired" in \
        capsys.readouterr().out
    rows = comparisons(out, "comparison = 'r1.faq.vs.recorded'")
    faith = rows[("recorded", "*", "faithfulness")]
    assert faith["baseline_bot"] == "faq" and faith["n_pairs"] == N
    # the faq bot knows 60 of the 100 answers: the recorded answers are better
    assert rows[("recorded", "*", "rougeL")]["delta"] > 0
    assert os.path.exists(os.path.join(out, "runs", "r1", "compare",
                                       "r1.faq.vs.recorded.html"))
    # the run's report computed the same head to head in the pipeline
    with open(os.path.join(out, "runs", "r1", "manifest.json"), encoding="utf-8") as fh:
        (h2h,) = json.load(fh)["head_to_head"]
    assert h2h["bots"] == ["faq", "recorded"] and h2h["paired"] == N
    keys = ("n_pairs", "wins", "ties", "losses", "delta", "ci_low", "ci_high", "p_adjusted")
    for row in h2h["rows"]:
        want = rows[("recorded", "*", row["metric"])]
        assert [row[k] for k in keys] == pytest.approx([want[k] for k in keys], nan_ok=True)
    md = open(os.path.join(out, "runs", "r1", "report.md"), encoding="utf-8").read()
    assert "### recorded − faq (100 paired cases)" in md
    assert "Metrics significantly better for recorded: " in md


@pytest.mark.parametrize("args,message", [
    (("r1", "nope"), "run nope has no completed attempt"),
    (("r1:faq", "r2"), "give a bot on both sides"),
    (("r1", "r2", "--config", "GATE"), "gate[0] {metric: toxicity, max_drop: 0.1} matches "
                                       "nothing compared"),
    (("r1", "bad id"), "--candidate 'bad id' must be RUN_ID or RUN_ID:BOT"),
])
def test_bad_invocations_exit_2_with_one_line(runs, capsys, tmp_path, args, message):
    out, _ = runs
    gate = tmp_path / "gate.yaml"
    gate.write_text("gate: [{metric: toxicity, max_drop: 0.1}]\n")
    assert compare(out, *[str(gate) if a == "GATE" else a for a in args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_reports_in_headless_chromium(runs, tmp_path):
    """report.html and a comparison page as a person sees them: charts drawn,
    nothing fetched, the injected <script> shown as text and never run."""
    if not browser.available():
        if os.environ.get("CI"):
            pytest.fail(f"{browser.CHROMIUM} is missing (.ci/run installs Debian's chromium)")
        pytest.skip(f"{browser.CHROMIUM} not installed")
    out, _ = runs
    assert compare(out, "r1", "r3") == 0  # no --config: no gate
    pages = {"report": os.path.join(out, "runs", "r3", "report.html"),
             "compare": os.path.join(out, "runs", "r3", "compare", "r1.html")}
    md = open(os.path.join(out, "runs", "r3", "report.md"), encoding="utf-8").read()
    assert "pass rate [95% CI]" in md and "&lt;script&gt;" in md
    with browser.Browser() as b:
        for name, path in pages.items():
            page = b.open("file://" + path)
            (tmp_path / f"{name}.png").write_bytes(page.png)
            left = [u for u in page.requests if not u.startswith(("data:", "file:"))]
            assert left == [], f"{name} made requests: {left}"
            # the CSP would block one, and say so: the page must not even try
            assert not [m for m in page.console if "Content Security Policy" in m], page.console
            images = page.evaluate("Array.from(document.images).map(i => "
                                   "[i.alt, i.complete && i.naturalWidth > 100])")
            assert images and all(ok for _, ok in images), images
            assert page.evaluate("typeof window.__pwned") == "undefined"
            assert page.evaluate("document.title") != "PWNED"
            text = page.evaluate("document.body.innerText")
            assert "<script>window.__pwned = 1;" in text  # shown as text
            assert page.evaluate("document.querySelectorAll('script').length") == 0
            if name == "report":
                alts = {alt for alt, _ in images}
                assert {"verdict counts per bot", "histograms of metric values per bot",
                        "heat map of means per suite and metric",
                        "trend lines of headline metrics", "head to head of bot pairs"} <= alts
                # which bot is better, said in words and drawn, before the worst cases
                assert text.index("Head to head") < text.index("Worst cases")
                assert "Pass rate on the " in text and "paired cases: faq" in text
                assert "Metrics significantly better for recorded:" in text
                # the worst cases' table carries the reference and the metric values
                heads = page.evaluate("Array.from(document.querySelectorAll('h2')).find(h => "
                                      "h.textContent === 'Worst cases').nextElementSibling"
                                      ".nextElementSibling.querySelector('tr').innerText")
                assert "reference" in heads and "metrics" in heads, heads
            else:
                assert any(alt == "forest plot of deltas" for alt, _ in images)
            assert len(page.png) > 50_000  # a real page, not a blank one


def test_a_metric_no_case_has_on_both_sides_is_named_not_tabled(tmp_path):
    """latency_ms of two runs of recorded answers has no value on either side:
    the comparison's table gave it a row of dashes, '0/0/0' and no test, as if
    it had been compared. Both pages now leave it out of the table and name it
    below ('Not compared (no case has a value from both): latency_ms.'), as the
    run report's head to head does."""
    rows = [{"case_id": f"c{i}", "question": f"q{i}?", "expected_answer": f"a{i}",
             "answer": f"a{i}" if i % 3 else "no"} for i in range(12)]
    cases, out = write_cases(str(tmp_path / "c.parquet"), rows), str(tmp_path / "out")
    for run_id in ("b", "c"):
        assert run_cli("--input", cases, "--output", out, "--run-id", run_id,
                       "--metrics", "exact_match,latency_ms") == 0
    assert run(["compare", "--output", out, "--baseline", "b", "--candidate", "c"]) == 0
    pages = {ext: open(os.path.join(out, "runs", "c", "compare", f"b.{ext}"),
                       encoding="utf-8").read() for ext in ("md", "html")}
    for ext, text in pages.items():
        assert "Not compared (no case has a value from both): latency_ms." in text, ext
        assert "0/0/0" not in text, ext
        assert "exact_match" in text, ext
    changes = pages["md"].split("## Changes, all suites")[1].split("\n## ")[0]
    table = [line for line in changes.splitlines() if line.startswith("| ")]
    assert [line.split("|")[1].strip() for line in table] == ["metric", "pass_rate",
                                                              "exact_match"], table
