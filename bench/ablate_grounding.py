"""Does every grounding metric, and every part of `hallucination`, earn its place?

    python bench/ablate_grounding.py [--rows 200] [--checkout DIR] [--out FILE.json]
    python bench/ablate_grounding.py --render FILE.json [FILE.json ...]

On the public benchmark (validation/public/data/, at most --rows rows of each
set's dev and test split, a seeded sample; 0: all) and on the team-written
validation sets (validation/cases.parquet, every row), without Beam and
without a judge, for the checkout at --checkout (default: this one; the code
before a change is measured from a `git archive` of it):

1. Every offline grounding metric against the bigram-precision baseline, AUC
   per public set on the test split and the mean over issue 21's six sets
   (all but dialfact). `hallucination`, `unsupported_facts` and
   `key_fact_recall` fit nothing, so their test AUC is already held out;
   `groundedness` is fitted, so it is refitted leave-one-set-out on the other
   sets' dev rows (bench/fit_groundedness.py's fit) and measured on the
   held-out set's test rows, once with all its signals and once without each.
2. The parts of `hallucination`: one pass records every fact the metric
   checks (kind, supported) and the answer's n-gram overlap with its
   contexts; the formula 1 − overlap × (1 − S_K), S_K the unsupported share
   of the facts of kinds K, is then recomputed with each kind left out (or,
   for the kinds the code before this change also checked, added), and with
   either factor alone. Figures: AUC per public set (dev and test) and the
   team sets' pairwise accuracy (within a question, a grounded answer above
   a hallucinated one: wrong number, date or entity, swapped entity,
   negation, invented list or claim).

Nothing here is fitted on test rows; the kinds were chosen on the dev split.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PUBLIC = os.path.join(ROOT, "validation", "public", "data")
TEAM = os.path.join(ROOT, "validation", "cases.parquet")
GOAL_SETS = ("begin", "factcheck_gpt", "faithdial", "q2", "summedits", "wice")
HALLUCINATED = {"wrong_number", "wrong_date", "wrong_entity", "swapped_entity", "negation",
                "invented_list", "invented_claim"}
FIGURES = {"number", "money", "percent"}
DATES = {"date", "time"}
FACTS = FIGURES | DATES | {"entity"}
# kinds the code before this change also checked (sentence checks only stood in
# when an answer had no other anchor, so they are not a kind of their own here)
OLD_KINDS = ("claim", "binding", "negation", "list_item")


def _split(case: dict) -> str:
    return next((t[6:] for t in case["tags"] or () if t.startswith("split:")), "all")


def _tag(case: dict, prefix: str) -> str | None:
    return next((t[len(prefix):] for t in case["tags"] or () if t.startswith(prefix)), None)


def load_public(rows: int | None) -> dict[str, list[dict]]:
    """Each public set's rows (at most `rows` per split, a seeded sample, file order)."""
    import pyarrow.parquet as pq
    sets = {}
    for path in sorted(glob.glob(os.path.join(PUBLIC, "*.parquet"))):
        cases = pq.read_table(path).to_pylist()
        if rows:
            keep: set[int] = set()
            for split in sorted({_split(c) for c in cases}):
                idx = [i for i, c in enumerate(cases) if _split(c) == split]
                keep.update(random.Random(0).sample(idx, min(rows, len(idx))))
            cases = [c for i, c in enumerate(cases) if i in keep]
        sets[os.path.basename(path)[:-len(".parquet")]] = cases
    return sets


def record(case: dict, with_signals: bool = True) -> dict:
    """What the analysis needs of one row: label, split, the metrics' values,
    the facts hallucination checked and its overlap, the baseline, the signals."""
    from bench.validity_public import bigram_precision
    from pipeline.postrun.agreement import acceptable
    from transforms.score.metrics.coverage import key_fact_recall
    from transforms.score.metrics.hallucination import hallucination, unsupported_facts
    refs = [r for r in (case.get("expected_answer"),) if r]
    h = hallucination(case["answer"], case["contexts"], question=case["question"],
                      references=refs)
    facts = [(a["kind"], a["supported"]) for a in h.details.get("anchors", ())
             if a["kind"] != "sentence"] if h.value is not None else []
    out = {"y": bool(acceptable(case["label"])), "split": _split(case),
           "question": _tag(case, "question:"), "kind": _tag(case, "kind:"),
           "hallucination": h.value, "unsupported_facts": unsupported_facts(h).value,
           "key_fact_recall": key_fact_recall(case["question"], case["answer"],
                                              case["contexts"]).value,
           "facts": facts, "overlap": h.details.get("overlap") if h.value is not None else None,
           "bigram": bigram_precision(case["answer"], case["contexts"])}
    if with_signals:
        try:
            from transforms.score.metrics.groundedness import SIGNALS, signals
        except ImportError:  # a checkout before the metric
            return out
        x = signals(case["question"], case["contexts"], case["answer"])
        out["signals"] = None if x is None else [x[s] for s in SIGNALS]
        out["signal_names"] = list(SIGNALS)
    return out


def measure(rows: int | None) -> dict:
    import pyarrow.parquet as pq
    t0 = time.process_time()
    public = {name: [record(c) for c in cases] for name, cases in load_public(rows).items()}
    team = [record(c, with_signals=False) for c in pq.read_table(TEAM).to_pylist()]
    return {"rows": rows, "public": public, "team": team,
            "cpu_s": round(time.process_time() - t0, 1)}


# -- analysis (pure: from the records) -----------------------------------------

def formula(kinds: set[str], use_overlap: bool = True, use_facts: bool = True):
    """1 − overlap × (1 − S_kinds) as a function of a record (None: not computable)."""
    def value(r: dict) -> float | None:
        if r["hallucination"] is None:
            return None
        checked = [ok for kind, ok in r["facts"] if kind in kinds]
        s = sum(not ok for ok in checked) / len(checked) if checked and use_facts else 0.0
        if r["overlap"] is None or not use_overlap:
            return s
        return 1.0 - r["overlap"] * (1.0 - s)
    return value


def variants(records: list[dict]) -> dict[str, object]:
    """The formula with each part left out or (kinds of the code before) added."""
    present = {k for r in records for k, _ in r["facts"]}
    out = {"as shipped (the metric's value)": lambda r: r["hallucination"],
           "1 − overlap × (1 − S_facts)": formula(FACTS),
           "− figures": formula(FACTS - FIGURES), "− dates and times": formula(FACTS - DATES),
           "− names": formula(FACTS - {"entity"}),
           "overlap alone: 1 − overlap": formula(set(), use_facts=False),
           "S_facts alone": formula(FACTS, use_overlap=False)}
    for kind in OLD_KINDS:
        if kind in present:
            out[f"+ {kind}s (code before)"] = formula(FACTS | {kind})
    if {"binding", "negation"} <= present:
        out["+ bindings + negations (code before)"] = formula(FACTS | {"binding", "negation"})
    return out


def auc(records: list[dict], value, split: str, higher_is_better: bool = False) -> float | None:
    from pipeline.postrun.agreement import roc_auc
    pairs = [(v, r["y"]) for r in records if r["split"] == split
             and (v := value(r)) is not None]
    if not pairs or len({y for _, y in pairs}) < 2:
        return None
    return roc_auc([v for v, _ in pairs], [y for _, y in pairs], higher_is_better)


def team_pairwise(team: list[dict], value, split: str) -> float | None:
    from pipeline.postrun.agreement import pairwise_accuracy
    items = [(r["question"], v, r["y"]) for r in team if r["split"] == split
             and (v := value(r)) is not None and (r["y"] or r["kind"] in HALLUCINATED)]
    return pairwise_accuracy(items, False)[0]


def groundedness_lodo(public: dict[str, list[dict]], drop: str | None = None) -> dict:
    """groundedness refitted without each set (dev rows of the others), AUC on its
    test rows; `drop`: a signal left out of the model."""
    import numpy as np

    from bench.fit_groundedness import fit_on, scores
    names = next(r["signal_names"] for rs in public.values() for r in rs if "signal_names" in r)
    cols = [i for i, s in enumerate(names) if s != drop]
    sets = {}
    for name, rs in public.items():
        rs = [r for r in rs if r.get("signals") is not None]
        sets[name] = {"x": np.array([[r["signals"][i] for i in cols] for r in rs], float),
                      "y": np.array([r["y"] for r in rs]),
                      "dev": np.array([r["split"] == "dev" for r in rs])}
    out = {}
    for name in sets:
        model, _ = fit_on(sets, [n for n in sets if n != name])
        test = ~sets[name]["dev"]
        from pipeline.postrun.agreement import roc_auc
        out[name] = roc_auc(list(scores(model, sets[name]["x"][test])),
                            list(sets[name]["y"][test]))
    return out


def _mean(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def _f(v: float | None, ref: float | None = None) -> str:
    if v is None:
        return "–"
    return f"{v:.3f}" if ref is None else f"{v - ref:+.3f}"


def render(result: dict, label: str = "") -> str:
    public, team = result["public"], result["team"]
    sets = sorted(public)
    goal = [s for s in sets if s in GOAL_SETS]
    n_test = sum(1 for s in sets for r in public[s] if r["split"] == "test")
    n_dev = sum(1 for s in sets for r in public[s] if r["split"] == "dev")
    cap = f"at most {result['rows']} rows per split and set" if result["rows"] else "every row"
    lines = [f"**{label or 'this checkout'}**: {cap} ({n_dev} dev, {n_test} test rows); "
             f"{result['cpu_s']} CPU-s.", "",
             "**1. Every offline grounding metric against the bigram baseline** (AUC on the "
             "test split; mean over the six sets of issue 21's goals):", "",
             "| metric | " + " | ".join(sets) + " | mean of 6 | bigram mean of 6 | beats bigram |",
             "|---|" + "---:|" * (len(sets) + 3)]
    bigram = {s: auc(public[s], lambda r: r["bigram"], "test", True) for s in sets}
    bmean = _mean(bigram[s] for s in goal)
    rows: list[tuple[str, dict]] = [
        (m, {s: auc(public[s], lambda r, m=m: r[m], "test", m == "key_fact_recall")
             for s in sets}) for m in ("hallucination", "unsupported_facts", "key_fact_recall")]
    has_signals = any("signal_names" in r for rs in public.values() for r in rs)
    if has_signals:
        rows.append(("groundedness (leave-one-set-out)", groundedness_lodo(public)))
    rows.append(("*bigram precision*", bigram))
    for name, aucs in rows:
        mean = _mean(aucs[s] for s in goal)
        beats = "" if name.startswith("*") else (
            "–" if mean is None else "yes" if mean > bmean else "**no**")
        lines.append(f"| {name} | " + " | ".join(_f(aucs[s]) for s in sets)
                     + f" | {_f(mean)} | {_f(bmean)} | {beats} |")
    if has_signals:
        names = next(r["signal_names"] for rs in public.values() for r in rs
                     if "signal_names" in r)
        full = _mean(rows[3][1][s] for s in goal)
        lines += ["", "`groundedness` without each of its signals, refitted leave-one-set-out "
                  "(change of the mean test AUC of the six sets; negative: the signal helps):", "",
                  "| signal left out | " + " | ".join(sets) + " | mean of 6 | change |",
                  "|---|" + "---:|" * (len(sets) + 2)]
        for signal in names:
            aucs = groundedness_lodo(public, drop=signal)
            mean = _mean(aucs[s] for s in goal)
            lines.append(f"| {signal} | " + " | ".join(_f(aucs[s]) for s in sets)
                         + f" | {_f(mean)} | {_f(mean, full)} |")
    records = [r for s in sets for r in public[s]]
    lines += ["", "**2. The parts of `hallucination`**: 1 − overlap × (1 − S_K) with each part "
              "left out or added (AUC, lower value = supported; team: grounded > hallucinated "
              "pairwise):", ""]
    for split in ("dev", "test"):
        lines += [f"| {split} split | " + " | ".join(sets) + " | mean of 6 | team |",
                  "|---|" + "---:|" * (len(sets) + 2)]
        for name, value in variants(records).items():
            aucs = {s: auc(public[s], value, split) for s in sets}
            lines.append(f"| {name} | " + " | ".join(_f(aucs[s]) for s in sets)
                         + f" | {_f(_mean(aucs[s] for s in goal))}"
                         + f" | {_f(team_pairwise(team, value, split))} |")
        base = {s: auc(public[s], lambda r: r["bigram"], split, True) for s in sets}
        lines.append("| *bigram precision* | " + " | ".join(_f(base[s]) for s in sets)
                     + f" | {_f(_mean(base[s] for s in goal))} | |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200,
                    help="at most this many rows of each public set's split (0: all)")
    ap.add_argument("--checkout", default=ROOT, help="the checkout whose metrics are measured")
    ap.add_argument("--label", default=None, help="what the checkout is, for the tables")
    ap.add_argument("--out", default=None, help="write the records as JSON here")
    ap.add_argument("--render", nargs="+", default=None,
                    help="only render these JSON files of records, one after the other")
    ap.add_argument("--markdown", default=None, help="also write the rendered tables here")
    args = ap.parse_args(argv)
    if args.render:
        sys.path.insert(0, ROOT)
        pages = []
        for path in args.render:
            with open(path) as fh:
                result = json.load(fh)
            pages.append(render(result, result.get("label") or result.get("checkout", "")))
        text = "\n\n".join(pages)
        if args.markdown:
            with open(args.markdown, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        print(text)
        return 0
    sys.path.insert(0, ROOT)  # bench.fit_groundedness and the public sets are this checkout's
    sys.path.insert(0, os.path.abspath(args.checkout))
    result = measure(args.rows or None)
    result["checkout"] = os.path.abspath(args.checkout)
    result["label"] = args.label
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh)
    print(render(result, result["checkout"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
