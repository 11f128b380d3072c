"""Every deterministic metric's value, details and error, row by row, to check
that a speed-up changed nothing.

    PYTHONHASHSEED=0 python bench/value_snapshot.py save OUT.pkl [CASES.parquet ...]
    python bench/value_snapshot.py compare BEFORE.pkl AFTER.pkl

`save` scores each file's cases (default: validation/cases.parquet,
examples/support/cases.parquet and bench/data/cases_5000_seed0.parquet) with
the scorers of bench/config_deterministic.yaml plus reference_coverage and
key_fact_recall, one scorer at a time (`scoring.score_turn`) and, where the
code has it, all at once (`scoring.score_all`, the pipeline's Score step;
it must agree), and stores (value, details as sorted JSON, error) per case and
metric. Run it on the old code (a `git archive` of it, with this file and
bench/profile_metrics.py copied in) and on the new, with the same PYTHONHASHSEED: some details list names in set order, which varies with the
hash seed. `compare` says how many rows differ and shows the first ones.
"""
from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

DEFAULT_INPUTS = (ROOT / "validation" / "cases.parquet", ROOT / "examples" / "support" / "cases.parquet",
                  BENCH / "data" / "cases_5000_seed0.parquet")


def _row(results: dict) -> dict:
    return {m: (r.value, json.dumps(r.details, sort_keys=True, default=str), r.error)
            for m, r in results.items()}


def save(out: str, inputs: list[str]) -> None:
    import profile_metrics as pm
    from schemas.records import Turn
    from transforms.score import scoring
    cfg = pm.load_config(str(pm.CONFIG))
    chosen = scoring.select_scorers(tuple(cfg.metrics) + ("reference_coverage", "key_fact_recall"),
                                    cfg.metric_options, judge_configured=False)
    snapshot = {}
    for path in inputs:
        cases = pm.cases(Path(path))
        idf = pm.idf_of(cases)
        for case in cases:
            turn = Turn(case, "recorded", case.answer)
            one_by_one = {}
            for scorer, options in chosen:
                one_by_one.update(scoring.score_turn(scorer, options, turn, idf))
            row = _row(one_by_one)
            if hasattr(scoring, "score_all"):
                fused = {}
                for results in scoring.score_all(chosen, turn, {"idf": idf}).values():
                    fused.update(results)
                if _row(fused) != row:
                    raise SystemExit(f"score_all differs from score_turn on {case.case_id}")
            snapshot[(Path(path).name, case.case_id)] = row
    with open(out, "wb") as fh:
        pickle.dump(snapshot, fh)
    print(f"{len(snapshot)} rows saved to {out}")


def compare(before: str, after: str) -> int:
    with open(before, "rb") as fh:
        a = pickle.load(fh)
    with open(after, "rb") as fh:
        b = pickle.load(fh)
    if a.keys() != b.keys():
        print("the snapshots hold different rows")
        return 1
    different = [k for k in a if a[k] != b[k]]
    for key in different[:5]:
        for metric in a[key]:
            if a[key][metric] != b[key].get(metric):
                print(key, metric, a[key][metric], "\n  !=", b[key].get(metric))
    print(f"rows {len(a)}, metrics per row {len(next(iter(a.values())))}, different {len(different)}")
    return 1 if different else 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "save":
        save(argv[1], argv[2:] or [str(p) for p in DEFAULT_INPUTS])
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(argv[1], argv[2])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
