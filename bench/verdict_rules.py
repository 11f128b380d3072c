"""Does every rule of the default verdict earn its place, and what would deciding more cost?

    python bench/verdict_rules.py [--work DIR]

One offline evalbeam run (default config: recorded answers, no reference, no
judge) over the `test` split of every committed public set, and one over the
team-written validation sets (validation/cases.parquet); --work keeps them (a
second call with the same DIR reuses them). Then, without Beam:

1. Each default rule's signal against the three baselines of
   bench/validity_public.py, on data it was not tuned on: AUC per public set
   (test split; `groundedness` refitted leave-one-set-out), and, for the
   `unsupported_facts > 0.5 -> WARN` rule, on the rows it acts on (those the
   rules before it would PASS): its AUC there, and how many unsupported
   answers it keeps from PASS against a WARN on the best baseline that holds
   back the same number of rows.
2. The default verdict held out (groundedness's model and cut-offs refitted
   without the set, as bench/validity.py does) with each rule left out:
   decided share, unsupported PASS, supported FAIL, decided accuracy and the
   BA of PASS per set; the team-written sets' accuracy and kappa (the shipped
   model: nothing is fitted on them).
3. The cascade's escalation share (judge.escalate: undecided escalates the
   WARN rows, so it is 1 - decided) against issue 21's error goals: the
   verdict's cut-offs refitted by bench/fit_groundedness.py with the goals
   loosened k times, held out, until at most 40% of the rows are undecided.

Writes validation/results/verdict_rules.json and .md (VALIDITY.md includes the .md).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from bench.fit_groundedness import (GOAL_MEAN, GOAL_WORST, Fits, held_out_scores,  # noqa: E402
                                    leave_one_out, load_sets)
from bench.validity import read_run, run_evalbeam, tag  # noqa: E402
from bench.validity_changes import CORE  # noqa: E402  (issue 21's six sets)
from bench.validity_public import (BASELINES, auc_of, baseline_values, selective,  # noqa: E402
                                   verdicts_with)
from pipeline.postrun.agreement import acceptable, verdict_agreement  # noqa: E402
from transforms.decide.presets import DEFAULT_RULES, fitted_rules  # noqa: E402
from transforms.decide.rules import when_text  # noqa: E402

RESULTS = os.path.join(ROOT, "validation", "results")
WARN_RULE = ("unsupported_facts", "WARN")
LOOSER = (1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0)  # goal multipliers for part 3
COMMAND = "python bench/verdict_rules.py"


def run_sets(work: str) -> dict[str, tuple[list[dict], dict]]:
    """{"public": (rows, by_case), "team": (rows, by_case)}, running evalbeam once each."""
    out = {}
    public = os.path.join(work, "public-test.parquet")
    if not os.path.exists(public):
        tables = []
        folder = os.path.join(ROOT, "validation", "public", "data")
        for name in sorted(os.listdir(folder)):
            table = pq.read_table(os.path.join(folder, name))
            tables.append(table.filter(pa.array(
                ["split:test" in t for t in table.column("tags").to_pylist()])))
        pq.write_table(pa.concat_tables(tables), public)
    for key, cases in (("public", public),
                       ("team", os.path.join(ROOT, "validation", "cases.parquet"))):
        target = os.path.join(work, key)
        if not os.path.exists(os.path.join(target, "results")):
            run_evalbeam(ROOT, cases, target, f"rules-{key}", None)
        else:
            REUSED.append(key)
        out[key] = read_run(target, f"rules-{key}")
    return out


REUSED: list[str] = []  # the runs found in --work (their CPU is not in this call's)


def variants(cuts: dict) -> dict[str, tuple]:
    """The default rules with each rule left out in turn (the reference rules
    never apply on the public sets: they have no reference)."""
    rules = fitted_rules(cuts)
    out = {"as shipped": rules}
    for i, r in enumerate(rules):
        bound = r.below if r.below is not None else r.above
        out[f"without {r.metric} {'<' if r.below is not None else '>'} "
            f"{'cut' if r.metric == 'groundedness' else bound} -> {r.verdict}"
            + (f" where {r.when.metric} is long" if r.when else "")] = rules[:i] + rules[i + 1:]
    return out


def signal_evidence(rows: list[dict], by_case: dict, lodo: dict) -> dict:
    """AUC per public set of each default rule's metric and of the baselines."""
    out = {}
    for name in sorted({r["suite"] for r in rows}):
        mine = [r for r in rows if r["suite"] == name]
        base = baseline_values(mine)
        out[name] = {"groundedness (leave-one-set-out)": lodo[name]["auc"],
                     "unsupported_facts": auc_of(mine, by_case, "unsupported_facts", False),
                     "reference_coverage": auc_of(mine, by_case, "reference_coverage"),
                     **{b: auc_of(mine, base, b) for b in BASELINES}}
    return out


def warn_rule_evidence(rows: list[dict], by_case: dict, held: dict) -> dict:
    """On the rows the held-out rules before `unsupported_facts > 0.5 -> WARN`
    would PASS: that metric's AUC and the baselines', and the unsupported
    answers it keeps from PASS against a WARN on each baseline that holds back
    the same number of rows (its lowest values)."""
    out = {}
    for name in sorted({r["suite"] for r in rows}):
        mine = [r for r in rows if r["suite"] == name]
        cuts = held[name]["cuts"]
        rules = [x for x in fitted_rules(cuts)
                 if (x.metric, x.verdict) != WARN_RULE]
        verdicts = verdicts_with(mine, by_case, rules, "groundedness", held[name]["scores"])
        passed = [r for r, v in zip(mine, verdicts) if v == "PASS"]
        labels = [bool(acceptable(r["label"])) for r in passed]
        flagged = [(by_case.get(r["case_id"], {}).get("unsupported_facts") or 0) > 0.5
                   for r in passed]
        base = baseline_values(mine)
        row = {"passed": len(passed), "unsupported": labels.count(False),
               "held_back": sum(flagged),
               "unsupported_held_back": sum(1 for f, y in zip(flagged, labels) if f and not y),
               "auc": {"unsupported_facts": auc_of(passed, by_case, "unsupported_facts", False),
                       **{b: auc_of(passed, base, b) for b in BASELINES}},
               "matched": {}}
        k = row["held_back"]
        for b in BASELINES:
            ranked = sorted(zip(passed, labels),
                            key=lambda p, b=b: base[p[0]["case_id"]][b] if
                            base[p[0]["case_id"]][b] is not None else -1.0)
            row["matched"][b] = sum(1 for _, y in ranked[:k] if not y)
        out[name] = row
    return out


def held_out_verdicts(rows: list[dict], by_case: dict, held: dict) -> dict[str, dict]:
    """{variant: {set: selective figures}} on the public test rows, held out."""
    out: dict = {}
    for name in sorted({r["suite"] for r in rows}):
        mine = [r for r in rows if r["suite"] == name]
        labels = [bool(acceptable(r["label"])) for r in mine]
        for variant, rules in variants(held[name]["cuts"]).items():
            v = verdicts_with(mine, by_case, rules, "groundedness", held[name]["scores"])
            out.setdefault(variant, {})[name] = selective(labels, v)
    return out


def team_signals(rows: list[dict], by_case: dict) -> dict[str, float | None]:
    """AUC of each default rule's metric and of the baselines on the team-written
    sets' held-out `test` questions (the only rows with a reference)."""
    test = [r for r in rows if tag(r["tags"], "split") == "test" and r.get("label")]
    base = baseline_values(test)
    return {"groundedness": auc_of(test, by_case, "groundedness"),
            "unsupported_facts": auc_of(test, by_case, "unsupported_facts", False),
            "reference_coverage": auc_of(test, by_case, "reference_coverage"),
            **{b: auc_of(test, base, b) for b in BASELINES}}


def team_verdicts(rows: list[dict], by_case: dict, cuts: dict) -> dict[str, dict]:
    """{variant: {all, test}: accuracy, kappa, good FAIL, bad PASS, decided} on the
    team-written sets with the shipped model and cut-offs."""
    out = {}
    for variant, rules in variants(cuts).items():
        v = verdicts_with(rows, by_case, rules, "groundedness", {})
        res = {}
        for part, keep in (("all", lambda r: True),
                           ("test", lambda r: tag(r["tags"], "split") == "test")):
            pairs = [(r["label"], x) for r, x in zip(rows, v) if keep(r)]
            a = verdict_agreement(pairs)
            res[part] = {"n": a.n, "accuracy": a.accuracy, "kappa": a.kappa,
                         "good_failed": a.acceptable_failed, "bad_passed": a.unacceptable_passed,
                         "decided": sum(1 for _, x in pairs if x in ("PASS", "FAIL")) / len(pairs)}
        out[variant] = res
    return out


def summary(per_set: dict[str, dict]) -> dict:
    """Mean over issue 21's six sets and the worst set, as the goals read them."""
    core = [per_set[n] for n in CORE if n in per_set]

    def mean(key):
        return sum(s[key] for s in core) / len(core)
    return {"decided": mean("decided"), "decided_accuracy": mean("decided_accuracy"),
            "pass_ba": mean("pass_ba"), "bad_passed": mean("bad_passed"),
            "bad_passed_worst": max(s["bad_passed"] for s in core),
            "good_failed": mean("good_failed"),
            "good_failed_worst": max(s["good_failed"] for s in core),
            "undecided_all_rows": 1 - sum(s["decided"] * s["n"] for s in per_set.values())
            / sum(s["n"] for s in per_set.values())}


def meets(s: dict) -> bool:
    return (s["bad_passed"] <= GOAL_MEAN and s["bad_passed_worst"] <= GOAL_WORST
            and s["good_failed"] <= GOAL_MEAN and s["good_failed_worst"] <= GOAL_WORST)


def looser_goals(rows: list[dict], by_case: dict, sets: dict, fits: Fits) -> list[dict]:
    """Part 3: cut-offs refitted with the goals k times looser, held out."""
    out = []
    for k in LOOSER:
        goals = (round(GOAL_MEAN * k, 4), round(GOAL_WORST * k, 4))
        held = held_out_scores(sets, fits, goals)
        per_variant = {}
        for variant in ("as shipped", "without the unsupported_facts WARN"):
            per_set = {}
            for name in sorted({r["suite"] for r in rows}):
                mine = [r for r in rows if r["suite"] == name]
                cuts = held[name]["cuts"]
                rules = fitted_rules(cuts)
                if variant != "as shipped":
                    rules = tuple(x for x in rules if (x.metric, x.verdict) != WARN_RULE)
                v = verdicts_with(mine, by_case, rules, "groundedness", held[name]["scores"])
                per_set[name] = selective([bool(acceptable(r["label"])) for r in mine], v)
            per_variant[variant] = {"sets": per_set, "summary": summary(per_set)}
        out.append({"k": k, "goals": goals, "cuts": {n: {"fail_below": h["cuts"]["fail_below"],
                                                           "pass_from": h["cuts"]["pass_from"]}
                                                       for n, h in held.items()},
                    **per_variant})
    return out


def f(x) -> str:
    return "–" if x is None else f"{x:.3f}"


def render(rep: dict) -> str:
    reused = (f"; the {' and '.join(rep['reused'])} run reused from `--work`, not counted"
              if rep.get("reused") else "")
    lines = [f"`{COMMAND}` at {rep['commit']} ({rep['cpu_s']:.0f} CPU-s{reused}; load average "
             f"{rep['load']:.1f}). The default verdict's rules: "
             + "; ".join(rep["rules"]) + "; otherwise PASS.", "",
             "**1. Each rule's signal against the three baselines** (AUC on the public "
             "test splits; `groundedness` refitted leave-one-set-out; `reference_coverage` "
             "is null on every public row: none has a reference):", ""]
    ev = rep["signals"]
    cols = list(next(iter(ev.values())))
    lines += ["| signal | " + " | ".join(ev) + " | mean of 6 |",
              "|---|" + "---:|" * (len(ev) + 1)]
    for c in cols:
        vals = [ev[n][c] for n in CORE if ev[n][c] is not None]
        mean = sum(vals) / len(vals) if len(vals) == len(CORE) else None
        name = f"*{c}*" if c in BASELINES else c
        lines.append(f"| {name} | " + " | ".join(f(ev[n][c]) for n in ev) + f" | {f(mean)} |")
    t = rep["team_signals"]
    lines += ["", "The same on the team-written sets' held-out `test` questions (they have a "
              "reference; `groundedness` is fitted on public data only): "
              + ", ".join(f"{'*' + k + '*' if k in BASELINES else k} {f(v)}"
                          for k, v in t.items()) + "."]
    w = rep["warn_rule"]
    lines += ["", "`unsupported_facts > 0.5 -> WARN` where it acts: the rows the held-out "
              "rules before it would PASS. AUC there (unsupported vs supported), and the "
              "unsupported answers it keeps from PASS against a WARN on the lowest values "
              "of each baseline holding back as many rows:", "",
              "| set | would PASS | of them unsupported | held back | unsupported held back | "
              "AUC unsupported_facts | content words | bigrams | TF-IDF | same count by content "
              "words | by bigrams | by TF-IDF |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n, r in w.items():
        a, m = r["auc"], r["matched"]
        lines.append(f"| {n} | {r['passed']} | {r['unsupported']} | {r['held_back']} | "
                     f"{r['unsupported_held_back']} | {f(a['unsupported_facts'])} | "
                     f"{f(a['content_word_share'])} | {f(a['bigram_precision'])} | "
                     f"{f(a['tfidf_cosine'])} | {m['content_word_share']} | "
                     f"{m['bigram_precision']} | {m['tfidf_cosine']} |")
    tot = {k: sum(r[k] for r in w.values()) for k in ("held_back", "unsupported_held_back")}
    tot_m = {b: sum(r["matched"][b] for r in w.values()) for b in BASELINES}
    lines.append(f"| **all** | | | {tot['held_back']} | {tot['unsupported_held_back']} | | | | "
                 f"| {tot_m['content_word_share']} | {tot_m['bigram_precision']} | "
                 f"{tot_m['tfidf_cosine']} |")
    lines += ["", "**2. The default verdict held out with each rule left out** (public: "
              "mean of the six sets of issue 21's goals, worst set in brackets; team-written "
              "sets: every answer, the test split in brackets; decided = PASS + FAIL):", "",
              "| rules | decided | unsupported PASS | supported FAIL | decided accuracy | "
              "BA of PASS | goals met | team accuracy | team kappa | team good FAIL | "
              "team bad PASS | team decided |",
              "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for variant, s in rep["variants"].items():
        t, tt = rep["team"][variant]["all"], rep["team"][variant]["test"]
        lines.append(
            f"| {variant} | {f(s['decided'])} | {f(s['bad_passed'])} "
            f"({f(s['bad_passed_worst'])}) | {f(s['good_failed'])} ({f(s['good_failed_worst'])}) "
            f"| {f(s['decided_accuracy'])} | {f(s['pass_ba'])} | "
            f"{'yes' if meets(s) else '**no**'} | {f(t['accuracy'])} ({f(tt['accuracy'])}) | "
            f"{f(t['kappa'])} ({f(tt['kappa'])}) | {f(t['good_failed'])} | "
            f"{f(t['bad_passed'])} | {f(t['decided'])} |")
    lines += ["", "**3. What deciding more would cost** (the cascade escalates exactly the "
              "rows left at WARN): the verdict's two cut-offs refitted by "
              "`bench/fit_groundedness.py` with issue 21's error goals (10% mean, 20% worst "
              "set) loosened k times, held out; escalated = undecided share of all 7,723 "
              "public test rows; errors: mean of the six sets (worst):", "",
              "| k | goals mean / worst | rules | escalated (all rows) | decided (mean of 6) | "
              "unsupported PASS | supported FAIL | issue 21's goals |",
              "|---:|---|---|---:|---:|---:|---:|---|"]
    for row in rep["looser"]:
        for variant in ("as shipped", "without the unsupported_facts WARN"):
            s = row[variant]["summary"]
            lines.append(f"| {row['k']:g} | {row['goals'][0]:g} / {row['goals'][1]:g} | "
                         f"{variant} | {s['undecided_all_rows']:.1%} | {f(s['decided'])} | "
                         f"{f(s['bad_passed'])} ({f(s['bad_passed_worst'])}) | "
                         f"{f(s['good_failed'])} ({f(s['good_failed_worst'])}) | "
                         f"{'met' if meets(s) else '**not met**'} |")
    return "\n".join(findings(rep) + [""] + lines) + "\n"


def worse_without(shipped: dict, without: dict) -> list[str]:
    """The held-out error figures that leaving a rule out makes worse."""
    return [k for k in ("bad_passed", "bad_passed_worst", "good_failed", "good_failed_worst")
            if without[k] > shipped[k] + 1e-9]


LABELS = {"bad_passed": "unsupported PASS, mean", "bad_passed_worst": "worst set",
          "good_failed": "supported FAIL, mean", "good_failed_worst": "worst set"}


def findings(rep: dict) -> list[str]:
    """What the tables below say, in words (every figure read from them)."""
    ship = rep["variants"]["as shipped"]
    name = next(v for v in rep["variants"] if "unsupported_facts" in v)
    drop, team = rep["variants"][name], rep["team"]
    ev, ts = rep["signals"], rep["team_signals"]
    mean = {k: sum(ev[n][k] for n in CORE) / len(CORE)
            for k in ("unsupported_facts", *BASELINES)}
    w = rep["warn_rule"]
    held = sum(r["held_back"] for r in w.values())
    caught = sum(r["unsupported_held_back"] for r in w.values())
    matched = {b: sum(r["matched"][b] for r in w.values()) for b in BASELINES}
    worse = worse_without(ship, drop)
    saved = [row["as shipped"]["summary"]["undecided_all_rows"]
             - row["without the unsupported_facts WARN"]["summary"]["undecided_all_rows"]
             for row in rep["looser"]]
    first = next((row for row in rep["looser"]
                  if row["as shipped"]["summary"]["undecided_all_rows"] <= 0.40), None)
    out = ["**Findings.**", "",
           f"- `unsupported_facts > 0.5 -> WARN` stays. As a score its signal ranks below "
           f"all three baselines (mean AUC of the six sets {mean['unsupported_facts']:.3f} "
           f"against {min(mean[b] for b in BASELINES):.3f}–{max(mean[b] for b in BASELINES):.3f}"
           "), but the rule only acts on rows the groundedness rules would PASS, and there, "
           f"on data it was not tuned on, it holds back {held} rows of which {caught} are "
           f"unsupported, where a WARN on the lowest content-word share, bigram precision or "
           f"TF-IDF cosine holding back as many catches {matched['content_word_share']}, "
           f"{matched['bigram_precision']} or {matched['tfidf_cosine']}. Left out, the "
           f"held-out verdict gets worse on issue 21's error goals ("
           + ", ".join(f"{LABELS[k]} {ship[k]:.3f} → {drop[k]:.3f}" for k in worse)
           + f") for {drop['decided'] - ship['decided']:+.3f} decided; the team-written sets: "
           f"accuracy {team['as shipped']['all']['accuracy']:.3f} → "
           f"{team[name]['all']['accuracy']:.3f}, kappa {team['as shipped']['all']['kappa']:.3f}"
           f" → {team[name]['all']['kappa']:.3f}, bad PASS "
           f"{team['as shipped']['all']['bad_passed']:.3f} → {team[name]['all']['bad_passed']:.3f}."
           if worse else
           f"- `unsupported_facts > 0.5 -> WARN`: left out, no held-out error figure gets worse.",
           "- The `reference_coverage` rules cannot be checked on the public sets (no "
           "reference there). On the team-written sets' held-out questions its AUC is "
           f"{ts['reference_coverage']:.3f} against {min(ts[b] for b in BASELINES):.3f}–"
           f"{max(ts[b] for b in BASELINES):.3f} for the baselines; there (table 2) the WARN "
           f"below 0.7 keeps bad answers from PASS (bad PASS "
           f"{team['as shipped']['all']['bad_passed']:.3f} with it, "
           + next(f"{team[v]['all']['bad_passed']:.3f}" for v in team if "< 0.7" in v)
           + " without), and the FAIL below 0.25 decides "
           + next(f"{team['as shipped']['all']['decided'] - team[v]['all']['decided']:.3f}"
                  for v in team if "< 0.25" in v)
           + " of the rows with good FAIL the same with and without it ("
           + next(f"{team['as shipped']['all']['good_failed']:.3f} / "
                  f"{team[v]['all']['good_failed']:.3f}" for v in team if "< 0.25" in v)
           + "). Without either groundedness rule the held-out verdict breaks a goal or "
           "decides half as much (table 2). So the default is unchanged.",
           "- Issue 23's cascade escalates exactly the rows the offline verdict leaves at WARN "
           f"(escalated = 1 − decided): {rep['shipped_undecided']:.1%} of the "
           f"{rep['public_rows']:,} public test rows with the shipped cut-offs (the same share "
           "`python bench/cascade.py` escalates, BENCHMARKS.md §10), "
           f"{ship['undecided_all_rows']:.1%} with the cut-offs held out. Its goal of at most "
           "40% and issue "
           "21's error goals do not fit together: "
           + (f"the first loosening that escalates at most 40% (k = {first['k']:g}: "
              f"{first['as shipped']['summary']['undecided_all_rows']:.1%}) lets "
              f"{first['as shipped']['summary']['bad_passed']:.1%} of unsupported answers PASS "
              f"(worst set {first['as shipped']['summary']['bad_passed_worst']:.1%}) and FAILs "
              f"{first['as shipped']['summary']['good_failed']:.1%} of supported ones (worst "
              f"{first['as shipped']['summary']['good_failed_worst']:.1%}), against issue 21's "
              "10% (20% on any set) each"
              if first else "no loosening tried here escalates at most 40%")
           + ". Dropping the unsupported_facts WARN as well saves a further "
           f"{min(saved):.1%}–{max(saved):.1%} of the rows from escalation at a higher "
           "wrong-PASS rate (table 3). Meeting both needs a stronger "
           "offline signal, not other cut-offs."]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", help="keep the evalbeam runs here (reused when present)")
    args = ap.parse_args(argv)
    start = time.process_time()
    with tempfile.TemporaryDirectory(prefix="verdict-rules-") as tmp:
        work = args.work or tmp
        os.makedirs(work, exist_ok=True)
        runs = run_sets(work)
    rows, by_case = runs["public"]
    sets = load_sets()
    fits = Fits(sets)
    held = held_out_scores(sets, fits)
    lodo = leave_one_out(sets, fits)
    per_variant = held_out_verdicts(rows, by_case, held)
    rules = DEFAULT_RULES
    rep = {"command": COMMAND,
           "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                    capture_output=True, text=True).stdout.strip(),
           "rules": [f"{r.metric} {'<' if r.below is not None else '>'} "
                     f"{r.below if r.below is not None else r.above:g} -> {r.verdict}"
                     + (" (or null)" if r.or_null else "")
                     + (f" where {when_text(r.when)}" if r.when else "") for r in rules],
           "signals": signal_evidence(rows, by_case, lodo),
           "warn_rule": warn_rule_evidence(rows, by_case, held),
           "variants_per_set": per_variant,
           "variants": {v: summary(s) for v, s in per_variant.items()},
           "team": team_verdicts(*runs["team"], shipped),
           "team_signals": team_signals(*runs["team"]),
           "public_rows": len(rows),
           "shipped_undecided": sum(1 for r in rows if r["verdict"] not in ("PASS", "FAIL"))
           / len(rows),
           "looser": looser_goals(rows, by_case, sets, fits)}
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    rep["cpu_s"] = time.process_time() - start + children.ru_utime + children.ru_stime
    rep["load"] = os.getloadavg()[0]
    rep["reused"] = list(REUSED)
    with open(os.path.join(RESULTS, "verdict_rules.json"), "w") as fh:
        json.dump(rep, fh, indent=1, sort_keys=True)
    text = render(rep)
    with open(os.path.join(RESULTS, "verdict_rules.md"), "w") as fh:
        fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
