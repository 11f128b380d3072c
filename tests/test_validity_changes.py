"""VALIDITY.md's re-run record (bench/validity_changes.py) and the default verdict's
rule ablation (bench/verdict_rules.py): a figure that moves the wrong way is
called worse, and a rule left out is really left out."""
from __future__ import annotations

import json

from bench.validity_changes import changes, changes_section, headline, keep_previous
from bench.verdict_rules import meets, summary, variants


def report(accuracy: float, bad_passed: float, commit: str) -> dict:
    agreement = {"accuracy": accuracy, "kappa": 0.5, "good_failed": 0.1,
                 "bad_passed": bad_passed}
    return {"commit": commit, "sets": {"validation": {"presets": {"default": {
        "all": agreement, "by_split": {"test": agreement}}}}}}


def test_a_figure_that_moved_the_wrong_way_is_worse(tmp_path):
    old, new = report(0.90, 0.05, "aaa"), report(0.83, 0.01, "bbb")
    rows = {r["figure"]: r for r in changes({"figures": headline(old)}, new)}
    assert rows["team-written sets: default accuracy"]["worse"]          # 0.90 -> 0.83
    assert not rows["team-written sets: default bad PASS"]["worse"]      # 0.05 -> 0.01: better
    assert not rows["team-written sets: default kappa"]["worse"]         # unchanged
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    history = tmp_path / "previous.json"
    keep_previous(str(path), str(history))
    keep_previous(str(path), str(history))  # the same commit is kept once
    assert [r["commit"] for r in json.loads(history.read_text())["runs"]] == ["aaa"]
    text = "\n".join(changes_section(new, str(history)))
    assert "team-written sets: default accuracy 0.900 → 0.830" in text
    assert "| team-written sets: default bad PASS | 0.050 | 0.010 | – |" in text


def test_the_rule_variants_leave_out_one_rule_each():
    rules = variants({"fail_below": 0.1, "pass_from": 0.6})
    shipped = rules.pop("as shipped")
    assert len(rules) == len(shipped)
    for name, kept in rules.items():
        (gone,) = set(shipped) - set(kept)
        assert gone.metric in name and len(kept) == len(shipped) - 1


def test_the_summary_reads_the_goals_as_the_issue_does():
    def figures(bad, good):
        return {"n": 100, "decided": 0.5, "decided_accuracy": 0.9, "pass_ba": 0.7,
                "bad_passed": bad, "good_failed": good}
    sets = {n: figures(0.05, 0.02) for n in ("begin", "factcheck_gpt", "faithdial", "q2",
                                              "summedits")}
    s = summary({**sets, "wice": figures(0.19, 0.02), "dialfact": figures(0.9, 0.9)})
    assert abs(s["bad_passed"] - (5 * 0.05 + 0.19) / 6) < 1e-12   # dialfact is not a goal set
    assert s["bad_passed_worst"] == 0.19 and meets(s)
    assert not meets(summary({**sets, "wice": figures(0.21, 0.02)}))  # worst set over 20%
    assert abs(s["undecided_all_rows"] - 0.5) < 1e-12
