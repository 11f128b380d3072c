"""Does a non-linear combination of the offline metrics beat the linear ceiling?

    pip install scikit-learn   # only for this measurement; evalbeam does not need it
    python -m pipeline run --input validation/cases.parquet --output OUT \
        --config <(echo '{"bots":[{"name":"recorded","type":"precomputed"}]}') --run-id v
    python bench/validity_ceiling_nonlinear.py --output OUT --run-id v

`bench/validity_ceiling.py` fits a logistic regression; a verdict preset is an
ordered list of thresholds, i.e. a shallow decision list, which a linear model
does not bound. This fits decision trees (depth 2-5), gradient boosting and a
random forest on the `dev` questions of the validation sets, picks each one's
accept threshold for the best kappa on `dev`, and prints accuracy and kappa on
the held-out `test` questions (all, and English), beside the run's own verdicts.
A measurement for VALIDITY.md's "How far the offline metrics can go", not a
product rule.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.validity import DESCRIPTIVE, read_run, tag  # noqa: E402
from bench.validity_ceiling import _kappa  # noqa: E402
from pipeline.postrun.agreement import acceptable  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--output", required=True)
    ap.add_argument("--run-id", required=True)
    args = ap.parse_args(argv)
    try:
        from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
        from sklearn.tree import DecisionTreeClassifier
    except ImportError:
        raise SystemExit("needs scikit-learn: pip install scikit-learn")
    rows, by_case = read_run(args.output, args.run_id)
    rows = [r for r in rows if acceptable(r.get("label")) is not None]
    ranked = sorted({m for v in by_case.values() for m in v} - DESCRIPTIVE)  # as the linear ceiling
    x = np.array([[by_case.get(r["case_id"], {}).get(m) for m in ranked] for r in rows], dtype=float)
    x = np.where(np.isnan(x), -1.0, x)  # a null is its own value to a tree
    y = np.array([bool(acceptable(r["label"])) for r in rows])
    dev = np.array([tag(r.get("tags"), "split") == "dev" for r in rows])
    test = ~dev
    english = np.array([tag(r.get("tags"), "lang") == "en" for r in rows])
    verdict = np.array([r.get("verdict") == "PASS" for r in rows])

    def line(name: str, accepted: np.ndarray) -> None:
        print(f"| {name} | {np.mean(y[test] == accepted[test]):.3f} "
              f"| {_kappa(y[test], accepted[test]):.3f} "
              f"| {_kappa(y[test & english], accepted[test & english]):.3f} |")

    print("| model (fitted on dev) | test accuracy | test kappa | test kappa, English |")
    print("|---|---:|---:|---:|")
    line("the run's verdicts", verdict)
    models = {f"decision tree, depth {d}": DecisionTreeClassifier(max_depth=d, min_samples_leaf=10,
                                                                  random_state=0)
              for d in (2, 3, 4, 5)}
    models["gradient boosting, depth 2"] = GradientBoostingClassifier(
        max_depth=2, n_estimators=200, learning_rate=0.05, random_state=0)
    models["random forest"] = RandomForestClassifier(500, min_samples_leaf=5, random_state=0)
    for name, model in models.items():
        p = model.fit(x[dev], y[dev]).predict_proba(x)[:, 1]
        t = max(np.linspace(0.05, 0.95, 91), key=lambda t: _kappa(y[dev], p[dev] > t))
        line(name, p > t)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
