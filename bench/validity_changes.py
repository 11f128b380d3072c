"""VALIDITY.md's "this run against the last one": the headline figures of two
bench/validity.py results, and which of them got worse.

bench/validity.py keeps the headline figures of the result it overwrites in
validation/results/previous-headline.json, so every re-run says what moved.
"""
from __future__ import annotations

import json
import os
from typing import Iterator

CORE = ("begin", "factcheck_gpt", "faithdial", "q2", "summedits", "wice")  # issue 21's goals
PREVIOUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "validation", "results", "previous-headline.json")
WORSE_BY = 0.0005  # a move the table's three decimals cannot show is no change


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _public(pub: dict) -> Iterator[tuple[str, float | None, bool]]:
    sets, lodo = pub.get("sets", {}), pub.get("leave_one_set_out") or {}
    core = [n for n in CORE if n in sets]
    for metric in ("groundedness", "hallucination", "unsupported_facts", "key_fact_recall"):
        yield (f"public: {metric} AUC, mean of 6",
               _mean(sets[n]["metrics"].get(metric) for n in core), True)
    if lodo:
        yield "public: groundedness AUC held out, mean of 6", _mean(
            lodo[n]["auc"] for n in core if n in lodo), True
        yield "public: grounding decision BA held out, mean of 6", _mean(
            lodo[n]["balanced_accuracy"] for n in core if n in lodo), True
    for key, label, hib in (("decided", "decided", True),
                            ("decided_accuracy", "decided accuracy", True),
                            ("bad_passed", "unsupported PASS", False),
                            ("good_failed", "supported FAIL", False)):
        held = [sets[n].get("verdict_held_out") for n in core]
        if held and all(held):
            yield f"public: default verdict held out, {label}, mean of 6", _mean(
                h[key] for h in held), hib
            if key in ("bad_passed", "good_failed"):
                yield f"public: default verdict held out, {label}, worst set", max(
                    h[key] for h in held), hib
        yield f"public: default verdict as shipped, {label}, mean of 6", _mean(
            sets[n]["verdict"][key] for n in core), hib


def _team(rep: dict) -> Iterator[tuple[str, float | None, bool]]:
    for name, title in (("validation", "team-written sets"), ("example", "bundled example")):
        presets = rep.get("sets", {}).get(name, {}).get("presets", {})
        for preset in ("default", "seed"):
            p = presets.get(preset)
            if not p or "all" not in p:
                continue
            a = p["all"]
            yield f"{title}: {preset} accuracy", a["accuracy"], True
            yield f"{title}: {preset} kappa", a["kappa"], True
            yield f"{title}: {preset} good FAIL", a["good_failed"], False
            yield f"{title}: {preset} bad PASS", a["bad_passed"], False
            test = p.get("by_split", {}).get("test")
            if test:
                yield f"{title}: {preset} accuracy, test split", test["accuracy"], True
                yield f"{title}: {preset} kappa, test split", test["kappa"], True


def _metrics(rep: dict) -> Iterator[tuple[str, float | None, bool]]:
    """Every metric's pairwise accuracies and AUC on the team sets and the example
    (each already oriented: higher is better)."""
    for name, title in (("validation", "team-written sets"), ("example", "bundled example")):
        for metric, row in sorted(rep.get("sets", {}).get(name, {}).get("metrics", {}).items()):
            for key in ("grounding", "relevance", "auc"):
                yield f"{title}: {metric} {key}", row.get(key), True


def headline(rep: dict) -> dict[str, dict]:
    """{figure: {value, higher_is_better}} of one result file."""
    rows = list(_public(rep.get("public") or {})) + list(_team(rep)) + list(_metrics(rep))
    return {name: {"value": value, "higher_is_better": hib} for name, value, hib in rows}


def keep_previous(path: str, out: str = PREVIOUS, note: str = "") -> None:
    """Before a result file is overwritten: its headline figures join the history
    the next page compares against (one entry per commit measured)."""
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as fh:
        old = json.load(fh)
    runs = load_history(out)
    commit = old.get("commit", "unknown")
    runs = [r for r in runs if r["commit"] != commit or commit == "unknown"]
    runs.append({"commit": commit, "note": note, "figures": headline(old)})
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"runs": runs}, fh, indent=1, sort_keys=True)
        fh.write("\n")


def load_history(path: str = PREVIOUS) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)["runs"]


def changes(previous: dict, now: dict) -> list[dict]:
    """Every headline figure in both, with its change and whether it got worse."""
    out = []
    for name, new in headline(now).items():
        old = previous["figures"].get(name)
        if old is None or old["value"] is None or new["value"] is None:
            continue
        delta = new["value"] - old["value"]
        worse = (-delta if new["higher_is_better"] else delta) > WORSE_BY
        out.append({"figure": name, "before": old["value"], "after": new["value"],
                    "delta": delta, "worse": worse})
    return out


def _sentence(label: str, rows: list[dict]) -> str:
    worse = [r for r in rows if r["worse"]]
    if not worse:
        return f"Against {label}: none of {len(rows)} figures got worse."
    return (f"Against {label}: **{len(worse)} of {len(rows)} figures got worse**: "
            + "; ".join(f"{r['figure']} {r['before']:.3f} → {r['after']:.3f}" for r in worse)
            + ".")


def changes_section(now: dict, path: str = PREVIOUS) -> list[str]:
    """Every headline figure that moved between the kept runs and this one."""
    runs = load_history(path)
    if not runs:
        return []
    last = changes(runs[-1], now)
    out = ["## This run against the earlier ones", "",
           f"Headline figures of this page's `after` run (at {now.get('commit', '?')}) against "
           "earlier runs of `python bench/validity.py`, whose figures it keeps in "
           "`validation/results/previous-headline.json`. A figure is worse when it moved "
           f"the wrong way by more than {WORSE_BY}. The embedding metrics (answer_similarity, "
           "answer_relevance, bertscore) can move in the third decimal between two runs of "
           "the same code (a text's float32 vector depends on its batch), so a move of theirs "
           "that small is noise, not a change.", "",
           "- " + _sentence(f"the last run (at {runs[-1]['commit']})", last)]
    for run in runs[:-1]:
        out.append("- " + _sentence(f"{run['commit']} ({run['note']})" if run["note"]
                                    else run["commit"], changes(run, now)))
    figures = headline(now)
    moved = [name for name in figures if any(
        abs(r["delta"]) > WORSE_BY for run in runs for r in changes(run, now)
        if r["figure"] == name)]
    if moved:
        out += ["", "Figures that moved:", "",
                "| figure | " + " | ".join(r["commit"] for r in runs) + " | this run | "
                "worse than |", "|---|" + "---:|" * (len(runs) + 1) + "---|"]
        for name in moved:
            olds = [run["figures"].get(name, {}).get("value") for run in runs]
            worse = [run["commit"] for run in runs for r in changes(run, now)
                     if r["figure"] == name and r["worse"]]
            out.append(f"| {name} | " + " | ".join("–" if v is None else f"{v:.3f}"
                                                   for v in olds)
                       + f" | {figures[name]['value']:.3f} | "
                       + (", ".join(f"**{c}**" for c in worse) or "–") + " |")
    return out + [""]
