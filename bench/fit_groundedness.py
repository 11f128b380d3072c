"""Fits the `groundedness` metric's model and reports it leave-one-set-out.

    python bench/fit_groundedness.py            # fit, report, write transforms/data/groundedness.json
    python bench/fit_groundedness.py --dry-run  # fit and report only

On the committed public sets (validation/public/data/: licences that allow it),
in this process without Beam: the signals of transforms/score/metrics/groundedness.py
for every row, then an L2-regularised logistic regression on the `dev` rows of
every set, each set weighted alike (a set of 4,000 rows counts as much as one of
300), and the decision cut that maximises the sets' mean balanced accuracy on dev.
Leave-one-set-out: the same fit without one set, measured on that set's `test`
split (AUC, balanced accuracy at the cut, and the bigram baseline's AUC beside).
The measuring-only sets (local/) are never fitted on.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys

import numpy as np
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from bench.validity_public import balanced_accuracy, bigram_precision  # noqa: E402
from pipeline.postrun.agreement import roc_auc  # noqa: E402
from transforms.score.metrics.groundedness import (MODEL_PATH, SIGNALS, Model,  # noqa: E402
                                                   signals)

DATA = os.path.join(ROOT, "validation", "public", "data")
L2 = 1.0
COMMAND = "python bench/fit_groundedness.py"


def load_sets(folder: str = DATA) -> dict[str, dict]:
    """{set: {x, y, dev, bigram}} with the signals of every row (rows without
    words are left out: the metric is null there)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.parquet"))):
        rows = pq.read_table(path).to_pylist()
        xs, ys, dev, big = [], [], [], []
        for r in rows:
            x = signals(r["question"], r["contexts"], r["answer"])
            if x is None:
                continue
            xs.append([x[s] for s in SIGNALS])
            ys.append(r["label"] == "PASS")
            dev.append("split:dev" in r["tags"])
            big.append(bigram_precision(r["answer"], r["contexts"]) or 0.0)
        out[os.path.basename(path)[:-len(".parquet")]] = {
            "x": np.array(xs, float), "y": np.array(ys), "dev": np.array(dev),
            "bigram": np.array(big)}
    return out


def fit(x: np.ndarray, y: np.ndarray, weight: np.ndarray, l2: float = L2) -> Model:
    """Weighted logistic regression on standardised signals (Newton's method)."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    z = np.c_[(x - mean) / scale, np.ones(len(x))]
    w = np.zeros(z.shape[1])
    reg = np.r_[np.full(z.shape[1] - 1, l2), 0.0]
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        grad = z.T @ (weight * (p - y)) + reg * w
        hess = (z * (weight * p * (1 - p))[:, None]).T @ z + np.diag(reg)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return Model(SIGNALS, tuple(map(float, mean)), tuple(map(float, scale)),
                 tuple(map(float, w[:-1])), float(w[-1]))


def scores(model: Model, x: np.ndarray) -> np.ndarray:
    z = model.intercept + ((x - np.array(model.mean)) / np.array(model.scale)) @ np.array(
        model.weights)
    return 1.0 / (1.0 + np.exp(-z))


def fit_on(sets: dict[str, dict], names: list[str]) -> tuple[Model, float]:
    """The model fitted on the dev rows of `names` (each set the same total
    weight) and the cut with the best mean balanced accuracy on them."""
    x = np.vstack([sets[n]["x"][sets[n]["dev"]] for n in names])
    y = np.concatenate([sets[n]["y"][sets[n]["dev"]] for n in names]).astype(float)
    weight = np.concatenate([np.full(sets[n]["dev"].sum(), 1.0 / sets[n]["dev"].sum())
                             for n in names]) * len(x) / len(names)
    model = fit(x, y, weight)
    cuts = np.round(np.arange(0.05, 0.951, 0.01), 2)
    mean_ba = [np.mean([balanced_accuracy(list(sets[n]["y"][sets[n]["dev"]]),
                                          list(scores(model, sets[n]["x"][sets[n]["dev"]]) >= c))
                        for n in names]) for c in cuts]
    return model, float(cuts[int(np.argmax(mean_ba))])


def held_out(sets: dict[str, dict], name: str, model: Model, cut: float) -> dict:
    s = sets[name]
    test = ~s["dev"]
    p = scores(model, s["x"][test])
    y = list(s["y"][test])
    return {"n": int(test.sum()), "auc": roc_auc(list(p), y),
            "balanced_accuracy": balanced_accuracy(y, list(p >= cut)),
            "bigram_auc": roc_auc(list(s["bigram"][test]), y), "cut": cut}


def leave_one_out(sets: dict[str, dict]) -> dict[str, dict]:
    out = {}
    for name in sets:
        model, cut = fit_on(sets, [n for n in sets if n != name])
        out[name] = held_out(sets, name, model, cut)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="do not write the model file")
    args = ap.parse_args(argv)
    sets = load_sets()
    names = sorted(sets)
    model, cut = fit_on(sets, names)
    test = {n: held_out(sets, n, model, cut) for n in names}
    lodo = leave_one_out(sets)
    for title, res in (("fitted on every set's dev, measured on test", test),
                       ("leave-one-set-out, measured on the held-out set's test", lodo)):
        print(title)
        for n, r in res.items():
            print(f"  {n:14} n {r['n']:5}  AUC {r['auc']:.3f} (bigram {r['bigram_auc']:.3f})  "
                  f"BA {r['balanced_accuracy']:.3f}")
        print(f"  mean AUC {np.mean([r['auc'] for r in res.values()]):.3f}  "
              f"BA {np.mean([r['balanced_accuracy'] for r in res.values()]):.3f}")
    print("weights:", dict(zip(SIGNALS, np.round(model.weights, 3))), "cut", cut)
    if not args.dry_run:
        with open(MODEL_PATH, "w", encoding="utf-8") as fh:
            json.dump({"command": COMMAND, "fitted_on": {n: int(sets[n]["dev"].sum())
                                                          for n in names},
                       "model": model.to_json(), "decision_cut": cut,
                       "test": test, "leave_one_set_out": lodo}, fh, indent=1, sort_keys=True)
            fh.write("\n")
        print("wrote", os.path.relpath(MODEL_PATH, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
