"""Profile of the deterministic suite: time per metric, per stage, and the hot functions.

    python bench/profile_metrics.py [--rows 5000] [--seed 0] [--cprofile 25] [--markdown]

Reads (or generates) the synthetic cases of bench/make_synthetic.py and, in
this one process, without Beam:

1. per metric: each scorer of bench/config_deterministic.yaml over every row,
   as its ParDo runs it (`scoring.score_turn`), one scorer at a time, so
   every scorer pays its own tokenising (ms per row each);
2. per stage of the pipeline's per-row work: reading the Parquet into
   EvalCases, the precomputed bot, all scorers together (`Score`), verdict,
   result and score rows (`Publish` row building);
3. the baseline's own loop body (`bench/baseline_loop.score_row`), for comparison;
4. with --cprofile N, the N functions with the most own time under cProfile
   while the whole suite scores the rows;
5. with --beam, the pipeline itself (`evalbeam run`, FnApiRunner in_memory, in
   this process) under cProfile: seconds per stage (cumulative, cProfile's
   overhead included), so Beam's own share shows beside the metrics'.

Beam's own per-element cost (one ParDo per scorer, pickling between fused
stages) is not here: compare `bench/run_deterministic.py` with the CPU figures.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

import pyarrow.parquet as pq  # noqa: E402

from pipeline.config import DEFAULT_RULES, load_config  # noqa: E402
from schemas.records import EvalCase, Turn  # noqa: E402
from transforms.decide.rules import decide  # noqa: E402
from transforms.publish.rows import result_row, score_rows  # noqa: E402
from transforms.score import scoring  # noqa: E402
from transforms.score.metrics import relevance  # noqa: E402

CONFIG = BENCH / "config_deterministic.yaml"


def cases(path: Path) -> list[EvalCase]:
    rows = pq.read_table(path).to_pylist()
    return [EvalCase(case_id=r["case_id"], question=r["question"],
                     expected_answer=r["expected_answer"], contexts=r["contexts"],
                     answer=r["answer"], suite=r["suite"], tags=r["tags"] or [])
            for r in rows]


def idf_of(cs: list[EvalCase]) -> relevance.IdfTable:
    texts = []
    for c in cs:
        texts += [c.question] + [t for t in (c.expected_answer, c.answer) if t]
        texts += c.contexts or []
    return relevance.IdfTable.fit(texts)


def clock(fn: Callable[[], object]) -> float:
    """CPU seconds of fn (the machine is shared: wall time would count the others' work)."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def clear_caches() -> None:
    """Forget what earlier passes memoised, so each pass is measured cold (as a
    worker meets a row once). Knows the layout before the facts layer too
    (hallucination and grounding held the caches, transforms.lang the language)."""
    import importlib
    memos = (("transforms.score.facts.evidence", ("evidence_for", "context_index",
                                                   "_passage_evidence", "_passage_values", "_passage")),
             ("transforms.score.metrics.hallucination", ("_evidence_for", "_context_index",
                                                         "_context_grams", "_passage_evidence")),
             ("transforms.score.metrics.grounding", ("_passage",)),
             ("transforms.score.facts.support", ("checked_facts",)),
             ("transforms.text.languages", ("detect_language",)),
             ("transforms.lang", ("detect_language",)))
    for module_name, names in memos:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for name in names:
            cached = getattr(module, name, None)
            if hasattr(cached, "cache_clear"):
                cached.cache_clear()
    try:
        from transforms.score import analysis
        analysis.clear()
    except ImportError:  # before issue 13 there was no per-row memo
        pass


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cprofile", type=int, default=25, metavar="N",
                    help="list the N functions with the most own time (0: no cProfile)")
    ap.add_argument("--beam", action="store_true",
                    help="also profile the pipeline (in_memory) per stage")
    args = ap.parse_args(argv)

    path = BENCH / "data" / f"cases_{args.rows}_seed{args.seed}.parquet"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(BENCH / "make_synthetic.py"), str(args.rows),
                        str(path), "--seed", str(args.seed)], check=True)
    cfg = load_config(str(CONFIG))
    chosen = scoring.select_scorers(cfg.metrics, cfg.metric_options, judge_configured=False)
    t0 = time.process_time()
    cs = cases(path)
    t_read = time.process_time() - t0
    idf = idf_of(cs)
    n = len(cs)
    turns = [Turn(c, "recorded", c.answer) for c in cs]
    sides = {"idf": idf}
    ms = 1000.0 / n

    print(f"# {n:,} rows of {path.relative_to(ROOT)}; command: python bench/profile_metrics.py "
          + " ".join(sys.argv[1:] if argv is None else argv))
    print("\n| metric (scorer) | ms/row | share |\n|---|---:|---:|")
    per = {}
    for scorer, opts in chosen:
        side = sides.get(scorer.side_input)
        clear_caches()
        per[scorer.name] = clock(lambda: [scoring.score_turn(scorer, opts, t, side)
                                          for t in turns])
    total = sum(per.values())
    for name, secs in sorted(per.items(), key=lambda kv: -kv[1]):
        print(f"| {name} | {secs * ms:.3f} | {secs / total:.0%} |")
    print(f"| **all, one scorer at a time** | **{total * ms:.3f}** | 100% |")

    def score_all(ts: list[Turn]) -> list[Turn]:
        out = []
        for t in ts:
            for scorer, opts in chosen:
                t = t.evolve(scores={**t.scores, **scoring.score_turn(
                    scorer, opts, t, sides.get(scorer.side_input))})
            out.append(t)
        return out

    stages: dict[str, float] = {"read Parquet → EvalCase": t_read}
    stages["answer (precomputed bot → Turn)"] = clock(
        lambda: [Turn(c, "recorded", c.answer) for c in cs])
    clear_caches()
    t0 = time.process_time()
    scored = score_all(turns)
    stages["score (every scorer, in graph order)"] = time.process_time() - t0
    if hasattr(scoring, "score_all"):  # issue 13: one step per row, texts shared
        clear_caches()
        stages["score, fused (scoring.score_all: every scorer, texts shared)"] = clock(
            lambda: [scoring.score_all(chosen, t, sides) for t in turns])
    stages["decide (verdict)"] = clock(lambda: [decide(t.scores, DEFAULT_RULES, "PASS", None)
                                                for t in scored])
    stages["publish rows (results + scores)"] = clock(
        lambda: [(result_row(t, "r"), list(score_rows(t, "r"))) for t in scored])
    try:
        import baseline_loop
        from rouge_score import rouge_scorer
        rouge = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"])
        rows = pq.read_table(path).to_pylist()
        clear_caches()
        stages["(baseline loop body: score_row, for comparison)"] = clock(
            lambda: [baseline_loop.score_row(r, idf, rouge) for r in rows])
    except ImportError as exc:
        print(f"(baseline not timed: {exc})")
    print("\n| stage (per row, one process, no Beam) | ms/row |\n|---|---:|")
    for name, secs in stages.items():
        print(f"| {name} | {secs * ms:.3f} |")

    if args.cprofile:
        clear_caches()
        prof = cProfile.Profile()
        prof.enable()
        score_all(turns)
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(args.cprofile)
        print("\ncProfile of the score stage (sorted by own time):\n")
        print("\n".join(line for line in buf.getvalue().splitlines()
                        if line.strip() and not line.startswith(("   Ordered", "   List"))))
    if args.beam:
        beam_profile(path)
    return 0


# What `--beam` reports: the functions each stage's time is spent under.
BEAM_STAGES = (
    ("score (the Score step's DoFns)", "transforms/score/scoring.py", "process"),
    ("  of which hallucination", "transforms/score/metrics/hallucination.py", "hallucination"),
    ("  of which bleu", "transforms/score/metrics/overlap.py", "bleu"),
    ("idf side input (document frequencies)", "transforms/score/corpus.py", "add_input"),
    ("read cases", "transforms/read/cases.py", "process"),
    ("verdict", "transforms/decide/verdict.py", "process"),
    ("score rows (details as JSON)", "transforms/publish/rows.py", "score_rows"),
    ("write rows (scrub, partition, Parquet)", "transforms/publish/write.py", "process"),
    ("summary statistics", "transforms/publish/summary.py", "add_input"),
    ("finalize (manifest, report.md, report.html)", "transforms/publish/finalize.py", "process"),
    ("graph construction", "pipeline/graph.py", "build_pipeline"),
)


def beam_profile(path: Path) -> None:
    import shutil
    import tempfile
    from pipeline.cli import run
    out = tempfile.mkdtemp(prefix="profile-beam-")
    prof = cProfile.Profile()
    try:
        prof.enable()
        run(["run", "--input", str(path), "--output", out, "--config", str(CONFIG),
             "--run-id", "profile", "--direct_running_mode=in_memory"])
        prof.disable()
    finally:
        shutil.rmtree(out, ignore_errors=True)
    stats = pstats.Stats(prof).stats
    total = max(ct for (_, _, _), (_, _, _, ct, _) in stats.items())
    print(f"\n| stage (pipeline, in_memory, under cProfile) | s | share |\n|---|---:|---:|")
    for label, file, func in BEAM_STAGES:
        secs = sum(ct for (f, _, fn), (_, _, _, ct, _) in stats.items()
                   if f.endswith(file) and fn == func)
        print(f"| {label} | {secs:.1f} | {secs / total:.0%} |")
    print(f"| **whole run** | **{total:.1f}** | 100% |")


if __name__ == "__main__":
    sys.exit(main())
