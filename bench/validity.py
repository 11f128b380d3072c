"""Validity of evalbeam's metrics and verdicts against people's labels.

    python bench/validity.py                       # measure this checkout, update VALIDITY.md
    python bench/validity.py --checkout DIR --label before   # measure another checkout

Runs `evalbeam run` (offline: recorded answers, local embedder, no judge) on
 - the validation sets (validation/cases.parquet, built from the hand-written
   sources by validation/build.py: 5 domains, 6 languages, each question with
   good, hallucinated, poor and off-topic answers, every answer labelled), and
 - the bundled example (examples/support/cases.parquet; its `quality` column
   mapped to labels: see EXAMPLE_LABELS),
once per verdict preset, then reports per metric and per preset:
 - pairwise accuracy within a question: good > hallucinated (grounding) and
   good > poor or off-topic (relevance), ties one half;
 - ROC AUC against the labels (all answers);
 - verdict accuracy and Cohen's kappa against the labels, the share of good
   answers that FAIL and of bad ones that PASS;
per language, for long (>= 150 words) and short good answers, and on the
`dev` and `test` splits of the questions. Results go to
bench/results/validity-<label>.json; VALIDITY.md is rewritten from every
results file present (so `before` and `after` sit side by side), and the
headline figures the docs quote (docs/concepts/verdicts.md, between its
validity-figures markers) from `after`.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from pipeline.postrun.agreement import (acceptable, pairwise_accuracy, roc_auc,  # noqa: E402
                                        verdict_agreement)
from bench.validity_ceiling import offline_ceiling, pairwise_ceiling  # noqa: E402
from bench.validity_public import selective, set_report, verdicts_with  # noqa: E402

RESULTS_DIR = os.path.join(ROOT, "validation", "results")
PUBLIC_DIR = os.path.join(ROOT, "validation", "public")
EXAMPLE_LABELS = {  # the bundled example's `quality` -> a reviewer's label
    "exact": "PASS", "paraphrase": "PASS", "very_long": "PASS", "non_ascii": "PASS",
    "hedged": "PASS", "polite": "PASS", "missing_facts": "WARN", "wrong_number": "FAIL",
    "wrong_date": "FAIL", "invented_claim": "FAIL", "off_topic": "FAIL", "empty": "FAIL",
}
HALLUCINATED = {"wrong_number", "wrong_date", "wrong_entity", "swapped_entity", "negation",
                "invented_list", "invented_claim"}
POOR = {"evasive", "restates_question", "partly_relevant", "off_topic", "empty"}
DESCRIPTIVE = {"answer_length", "latency_ms"}  # not quality scores: not ranked
PRESETS = {  # label -> the config's verdict section (None: the checkout's default)
    "default": None,
    "seed": {"preset": "seed"},
}
# Extra config per preset run: the seed preset's verdicts need only its three metrics
# (the full metric table comes from the default run), which keeps the command short.
PRESET_CONFIG = {"seed": {"metrics": ["hallucination", "lexical_relevance", "completeness"]}}
# The semantic metrics once more with the multilingual local embedder (validation set only).
MULTILINGUAL = {"embeddings": {"provider": "local", "model": "multilingual"},
                "metrics": ["answer_similarity", "answer_relevance"]}
SEED_SNAPSHOT = os.path.join(ROOT, "tests", "fixtures", "seed_verdicts.json")


def tag(tags, prefix, default=None):
    for t in tags or ():
        if t.startswith(prefix + ":"):
            return t.split(":", 1)[1]
    return default


def prepare_example(tmp: str) -> str:
    """The bundled example with a `label` column from its `quality` column."""
    table = pq.read_table(os.path.join(ROOT, "examples", "support", "cases.parquet"))
    labels = [EXAMPLE_LABELS[q] for q in table.column("quality").to_pylist()]
    import pyarrow as pa
    table = table.append_column("label", pa.array(labels, pa.string()))
    path = os.path.join(tmp, "example.parquet")
    pq.write_table(table, path)
    return path


def run_evalbeam(checkout: str, cases: str, out: str, run_id: str, verdict,
                 extra: dict | None = None, bots: list | None = None) -> None:
    config = {"bots": bots or [{"name": "recorded", "type": "precomputed"}], **(extra or {})}
    if verdict is not None:
        config["verdict"] = verdict
    cfg_path = os.path.join(out + "-config.json")
    with open(cfg_path, "w") as fh:
        json.dump(config, fh)
    cmd = [sys.executable, "-m", "pipeline", "run", "--input", cases, "--output", out,
           "--config", cfg_path, "--run-id", run_id]
    proc = subprocess.run(cmd, cwd=checkout, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"evalbeam run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")


def read_run(out: str, run_id: str) -> tuple[list[dict], dict]:
    results = ds.dataset(os.path.join(out, "results"), format="parquet",
                         partitioning="hive").to_table(filter=pc.field("run_id") == run_id)
    scores = ds.dataset(os.path.join(out, "scores"), format="parquet",
                        partitioning="hive").to_table(
        columns=["case_id", "metric", "value"], filter=pc.field("run_id") == run_id)
    by_case: dict = defaultdict(dict)
    for r in scores.to_pylist():
        by_case[r["case_id"]][r["metric"]] = r["value"]
    return results.to_pylist(), by_case


F1_METRICS = ("rouge1", "rouge2", "rougeL", "bertscore")  # an F1 of a precision and a recall


def length_halves(out: str, run_id: str, rows: list[dict], question_of, long_of) -> dict:
    """Long vs short pairwise accuracy (as in `describe`) of the precision and the
    recall half of each F1 metric, read from its details: which half carries the
    metric's length bias."""
    table = ds.dataset(os.path.join(out, "scores"), format="parquet", partitioning="hive").to_table(
        columns=["case_id", "metric", "details"],
        filter=(pc.field("run_id") == run_id) & pc.field("metric").isin(list(F1_METRICS)))
    halves: dict = defaultdict(dict)
    for r in table.to_pylist():
        details = json.loads(r["details"]) if r["details"] else {}
        for half in ("precision", "recall"):
            if isinstance(details.get(half), (int, float)):
                halves[r["case_id"]][(r["metric"], half)] = details[half]
    result: dict = {}
    for metric, half in sorted({k for v in halves.values() for k in v}):
        entries = [(r, halves[r["case_id"]][(metric, half)], acceptable(r["label"])) for r in rows
                   if r.get("label") is not None and (metric, half) in halves.get(r["case_id"], {})]
        result.setdefault(metric, {})[half] = {
            length: pairwise_accuracy([(question_of(r), v, ok) for r, v, ok in entries
                                       if not ok or long_of(r) == length])[0]
            for length in ("long", "short")}
    return result


def lower_is_better(out: str, run_id: str) -> set[str]:
    summary = ds.dataset(os.path.join(out, "summary"), format="parquet",
                         partitioning="hive").to_table(filter=pc.field("run_id") == run_id)
    return {r["metric"] for r in summary.to_pylist() if r["higher_is_better"] is False}


def describe(rows: list[dict], by_case: dict, lower: set[str], kind_of, question_of,
             lang_of, long_of) -> dict:
    """Per metric: pairwise accuracies and AUC; overall and per language / length."""
    metrics = sorted({m for v in by_case.values() for m in v} - DESCRIPTIVE)
    out: dict = {}
    for m in metrics:
        hib = m not in lower
        entries = []
        for r in rows:
            value = by_case.get(r["case_id"], {}).get(m)
            if value is None or r.get("label") is None:
                continue
            entries.append((r, value, acceptable(r["label"])))

        def pairs(select_bad, select_good=lambda r: True, select=lambda r: True):
            items = [(question_of(r), v, ok) for r, v, ok in entries if select(r) and (
                (ok and select_good(r)) or (not ok and select_bad(kind_of(r))))]
            return pairwise_accuracy(items, hib)

        def auc(select=lambda r: True):
            sub = [(v, ok) for r, v, ok in entries if select(r)]
            return roc_auc([v for v, _ in sub], [ok for _, ok in sub], hib) if sub else None

        row = {"higher_is_better": hib, "n": len(entries),
               "grounding": pairs(lambda k: k in HALLUCINATED)[0],
               "relevance": pairs(lambda k: k in POOR)[0],
               "auc": auc(),
               "long_vs_short": {
                   length: pairs(lambda k: True, lambda r, length=length: long_of(r) == length)[0]
                   for length in ("long", "short")},
               "by_language": {}}
        for lang in sorted({lang_of(r) for r, _, _ in entries}):
            sel = (lambda r, lang=lang: lang_of(r) == lang)
            row["by_language"][lang] = {
                "grounding": pairs(lambda k: k in HALLUCINATED, select=sel)[0],
                "relevance": pairs(lambda k: k in POOR, select=sel)[0],
                "auc": auc(sel)}
        out[m] = row
    return out


def verdicts(rows: list[dict], lang_of, long_of, kind_of, split_of) -> dict:
    def agreement(sel):
        a = verdict_agreement((r["label"], r["verdict"]) for r in rows if sel(r))
        return {"n": a.n, "accuracy": a.accuracy, "kappa": a.kappa,
                "good_failed": a.acceptable_failed, "bad_passed": a.unacceptable_passed,
                "confusion": a.confusion}
    res = {"all": agreement(lambda r: True), "by_language": {}, "by_split": {},
           "by_kind": {}}
    for lang in sorted({lang_of(r) for r in rows}):
        res["by_language"][lang] = agreement(lambda r, lang=lang: lang_of(r) == lang)
    for split in sorted({split_of(r) for r in rows} - {None}):
        res["by_split"][split] = agreement(lambda r, s=split: split_of(r) == s)
    for kind in sorted({kind_of(r) for r in rows}):
        ks = [r["verdict"] for r in rows if kind_of(r) == kind]
        res["by_kind"][kind] = {v: ks.count(v) for v in ("PASS", "WARN", "FAIL", "ERROR")}
    res["long_good"] = agreement(lambda r: acceptable(r["label"]) and long_of(r) == "long")
    res["short_good"] = agreement(lambda r: acceptable(r["label"]) and long_of(r) == "short")
    return res


def measure(checkout: str, label: str, only: set[str] | None = None,
            previous: dict | None = None, presets: set[str] | None = None,
            multilingual: bool = True) -> dict:
    subprocess.run([sys.executable, os.path.join(ROOT, "validation", "build.py")], check=True,
                   cwd=ROOT)
    report: dict = previous or {"label": label, "checkout": os.path.abspath(checkout),
                                 "sets": {}}
    with tempfile.TemporaryDirectory(prefix="validity-") as tmp:
        sets = {
            "validation": (os.path.join(ROOT, "validation", "cases.parquet"),
                           lambda r: tag(r["tags"], "kind"), lambda r: tag(r["tags"], "question"),
                           lambda r: tag(r["tags"], "lang"), lambda r: tag(r["tags"], "length"),
                           lambda r: tag(r["tags"], "split")),
            "example": (prepare_example(tmp), lambda r: tag(r["tags"], "quality"),
                        lambda r: tag(r["tags"], "topic"), lambda r: tag(r["tags"], "lang", "en"),
                        lambda r: "long" if len((r["answer"] or "").split()) >= 150 else "short",
                        lambda r: None),
        }
        for name, (cases, kind_of, question_of, lang_of, long_of, split_of) in sets.items():
            if only and name not in only:
                continue
            kept = report["sets"].get(name, {}) if presets else {}
            report["sets"][name] = {"presets": dict(kept.get("presets", {}))}
            for key in ("multilingual",):
                if key in kept and not multilingual:
                    report["sets"][name][key] = kept[key]
            for preset, verdict in PRESETS.items():
                if presets and preset not in presets:
                    continue
                out = os.path.join(tmp, f"{name}-{preset}")
                try:
                    run_evalbeam(checkout, cases, out, f"validity-{preset}", verdict,
                                 PRESET_CONFIG.get(preset))
                except SystemExit as exc:
                    report["sets"][name]["presets"][preset] = {"error": str(exc)[:500]}
                    continue
                rows, by_case = read_run(out, f"validity-{preset}")
                report["sets"][name]["presets"][preset] = verdicts(rows, lang_of, long_of,
                                                                   kind_of, split_of)
                if "metrics" not in report["sets"][name]:
                    report["sets"][name]["metrics"] = describe(
                        rows, by_case, lower_is_better(out, f"validity-{preset}"), kind_of,
                        question_of, lang_of, long_of)
                    report["sets"][name]["rows"] = len(rows)
                    report["sets"][name]["length_halves"] = length_halves(
                        out, f"validity-{preset}", rows, question_of, long_of)
                    if name == "validation" and preset == "default":
                        ranked = sorted({m for v in by_case.values() for m in v} - DESCRIPTIVE)
                        report["sets"][name]["ceiling"] = offline_ceiling(
                            rows, by_case, ranked, split_of, lang_of)
                        report["sets"][name]["grounding_ceiling"] = pairwise_ceiling(
                            rows, by_case, ranked, split_of, question_of, kind_of, HALLUCINATED)
            if name == "validation" and multilingual:
                out = os.path.join(tmp, "validation-multilingual")
                try:
                    run_evalbeam(checkout, cases, out, "validity-ml", None, MULTILINGUAL)
                    rows, by_case = read_run(out, "validity-ml")
                    report["sets"][name]["multilingual"] = describe(
                        rows, by_case, set(), kind_of, question_of, lang_of, long_of)
                except SystemExit as exc:
                    report["sets"][name]["multilingual"] = {"error": str(exc)[:300]}
        if not only or "example" in only:
            report["seed_snapshot"] = seed_snapshot_agreement(checkout, tmp)
        if not only or "public" in only:
            lodo, refitted = public_leave_one_out()
            report["public"] = measure_public(checkout, tmp, refitted=refitted)
            if "error" not in report["public"]:
                report["public"]["leave_one_set_out"] = lodo
    return report


def public_sets() -> dict[str, dict]:
    """The public benchmark's sets on this machine: committed (data/) and, when
    build.py has made them, the measuring-only ones (local/)."""
    found = {}
    for kind in ("data", "local"):
        for path in sorted(glob.glob(os.path.join(PUBLIC_DIR, kind, "*.parquet"))):
            found[os.path.basename(path)[:-len(".parquet")]] = {
                "path": path, "committed": kind == "data"}
    return found


def measure_public(checkout: str, tmp: str, sets: dict[str, dict] | None = None,
                   refitted: dict[str, dict] | None = None) -> dict:
    """One offline evalbeam run (default config: recorded answers, no reference, no
    judge) over the `test` split of every public set (`sets`: name -> {path,
    committed}; default: those on this machine), reported per set.

    `refitted`: {set: {"scores": {case_id: groundedness}, "cuts": {fail_below,
    pass_from}}}, the model and the verdict's cut-offs fitted without that set
    (bench/fit_groundedness.py's held_out_scores); the set then also gets
    `verdict_held_out`, the default preset's verdict with them in place of the
    shipped ones (every other rule and metric value as the run has them)."""
    from transforms.decide.presets import fitted_rules
    import pyarrow as pa
    sets = public_sets() if sets is None else sets
    if not sets:
        return {"error": "no public sets: run python validation/public/build.py"}
    tables = []
    for name, info in sets.items():
        table = pq.read_table(info["path"])
        test = [("split:test" in tags) for tags in table.column("tags").to_pylist()]
        tables.append(table.filter(pa.array(test)))
    cases = os.path.join(tmp, "public-test.parquet")
    pq.write_table(pa.concat_tables(tables), cases)
    out = os.path.join(tmp, "public")
    run_evalbeam(checkout, cases, out, "validity-public", None)
    rows, by_case = read_run(out, "validity-public")
    lower = lower_is_better(out, "validity-public")
    decision = None
    if any("groundedness" in v for v in by_case.values()):
        with open(os.path.join(checkout, "transforms", "data", "groundedness.json")) as fh:
            decision = ("groundedness", json.load(fh)["decision_cut"])
    report: dict = {"sets": {}}
    for name, info in sets.items():
        mine = [r for r in rows if r["suite"] == name]
        report["sets"][name] = {"committed": info["committed"],
                                "task": tag(mine[0]["tags"], "task") if mine else None,
                                **set_report(mine, by_case, lower, decision, skip=DESCRIPTIVE)}
        if refitted and name in refitted:
            cuts = refitted[name]["cuts"]
            held = verdicts_with(mine, by_case, fitted_rules(cuts), "groundedness",
                                 refitted[name]["scores"])
            report["sets"][name]["verdict_held_out"] = {
                **selective([bool(acceptable(r["label"])) for r in mine], held),
                "fail_below": cuts["fail_below"], "pass_from": cuts["pass_from"],
                "long_answers": cuts.get("long_answers")}
    return report


def public_leave_one_out() -> tuple[dict, dict]:
    """groundedness's fit (bench/fit_groundedness.py) and the verdict's cut-offs
    without each committed set, measured on that set's test split: how they do on
    a set they never saw. Returns (the fit's figures per set, the refitted scores
    and cut-offs per set for measure_public)."""
    from bench.fit_groundedness import Fits, held_out_scores, leave_one_out, load_sets
    sets = load_sets()
    fits = Fits(sets)
    return leave_one_out(sets, fits), held_out_scores(sets, fits)


def seed_snapshot_agreement(checkout: str, tmp: str) -> dict:
    """The bundled example under `verdict.preset: seed` against the verdicts
    recorded before issue 8 (tests/fixtures/seed_verdicts.json)."""
    with open(SEED_SNAPSHOT, encoding="utf-8") as fh:
        before = {(r["bot"], r["case_id"]): r for r in json.load(fh)["rows"]}
    out = os.path.join(tmp, "example-seed-snapshot")
    bots = [{"name": "faq", "type": "faq_match",
             "faq": os.path.join(ROOT, "examples", "support", "faq.parquet")},
            {"name": "recorded", "type": "precomputed"}]
    try:
        run_evalbeam(checkout, os.path.join(ROOT, "examples", "support", "cases.parquet"), out,
                     "seed-snapshot", {"preset": "seed"},
                     {"metrics": ["hallucination", "lexical_relevance", "completeness"]}, bots)
    except SystemExit as exc:
        return {"error": str(exc)[:300]}
    results = ds.dataset(os.path.join(out, "results"), format="parquet",
                         partitioning="hive").to_table().to_pylist()
    results = [r for r in results if (r["bot"], r["case_id"]) in before]  # cases added since
    same = sum(1 for r in results if before[(r["bot"], r["case_id"])]["verdict"] == r["verdict"])
    moves: dict = defaultdict(int)
    for r in results:
        old = before[(r["bot"], r["case_id"])]["verdict"]
        if old != r["verdict"]:
            moves[f"{old}->{r['verdict']}"] += 1
    return {"rows": len(results), "same": same, "changed": dict(moves)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", default=ROOT, help="the evalbeam checkout to measure")
    ap.add_argument("--label", default="after", help="name of this measurement")
    ap.add_argument("--render-only", action="store_true", help="only rewrite VALIDITY.md (and the figures in the docs)")
    ap.add_argument("--only", action="append", choices=("public", "validation", "example"),
                    help="measure only this set again, keeping the others from the last result")
    ap.add_argument("--preset", action="append", choices=tuple(PRESETS),
                    help="with --only: measure only this preset again (and not the "
                         "multilingual embedder run)")
    args = ap.parse_args(argv)
    os.makedirs(RESULTS_DIR, exist_ok=True)
    if not args.render_only:
        previous = None
        path = os.path.join(RESULTS_DIR, f"validity-{args.label}.json")
        if args.only and os.path.exists(path):
            with open(path) as fh:
                previous = json.load(fh)
        report = measure(args.checkout, args.label, set(args.only or ()), previous,
                         set(args.preset or ()), multilingual=not args.preset)
        report["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                          cwd=args.checkout, capture_output=True,
                                          text=True).stdout.strip() or "unknown"
        if args.label == "after":  # the figures this run replaces, for "against the last run"
            from bench.validity_changes import keep_previous
            keep_previous(path)
        with open(os.path.join(RESULTS_DIR, f"validity-{args.label}.json"), "w") as fh:
            json.dump(report, fh, indent=1, sort_keys=True)
    from bench.validity_report import DOCS_PAGE, render, rewrite_docs_figures
    reports = []
    for path in sorted(glob.glob(os.path.join(RESULTS_DIR, "validity-*.json"))):
        with open(path) as fh:
            reports.append(json.load(fh))
    render(reports, os.path.join(ROOT, "VALIDITY.md"))
    after = next((r for r in reports if r["label"] == "after"), None)
    if after is not None:  # the headline figures the docs quote
        rewrite_docs_figures(after, os.path.join(ROOT, DOCS_PAGE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
