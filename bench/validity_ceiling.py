"""How far can offline metrics go? A fitted ceiling for the verdict goals.

A verdict preset is a few thresholds; no preset made of the offline metrics
can agree with people better than the best *weighted combination* of all of
them. This fits one (an L2-regularised logistic regression over every ranked
metric, standardised, a missing value counted as the mean) on the `dev`
questions, picks the accept threshold with the best kappa there, and reports
accuracy and kappa on the held-out `test` questions, overall and per language.

It is a measurement, not a product rule: a figure below a goal says the goal
needs a better signal (a judge, an NLI model), not other thresholds.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from pipeline.postrun.agreement import acceptable, cohen_kappa

L2 = 1.0
STEPS = 3000
LEARNING_RATE = 0.5


def _kappa(labels: Sequence[bool], accepted: Sequence[bool]) -> float:
    return cohen_kappa([(bool(a), bool(b)) for a, b in zip(labels, accepted)]) or 0.0


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = L2) -> np.ndarray:
    """Weights (last one the intercept) by batch gradient descent: the problem is
    small (hundreds of rows, ~20 features) and convex, so this converges."""
    z = np.c_[x, np.ones(len(x))]
    w = np.zeros(z.shape[1])
    for _ in range(STEPS):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        w -= LEARNING_RATE * (z.T @ (p - y) + l2 * np.r_[w[:-1], 0.0]) / len(y)
    return w


def _design(rows: list[dict], by_case: dict, metrics: list[str]) -> np.ndarray:
    raw = np.array([[by_case.get(r["case_id"], {}).get(m) for m in metrics] for r in rows],
                   dtype=float)  # None -> nan
    mean = np.nanmean(raw, axis=0)
    raw = np.where(np.isnan(raw), mean, raw)
    std = raw.std(axis=0)
    return (raw - raw.mean(axis=0)) / np.where(std > 0, std, 1.0)


def offline_ceiling(rows: list[dict], by_case: dict, metrics: Sequence[str],
                    split_of: Callable[[dict], str | None],
                    lang_of: Callable[[dict], str | None]) -> dict | None:
    """Held-out agreement of the best linear combination of `metrics`."""
    rows = [r for r in rows if acceptable(r.get("label")) is not None]
    used = [m for m in metrics
            if sum(1 for r in rows if by_case.get(r["case_id"], {}).get(m) is not None) > 1]
    dev = np.array([split_of(r) == "dev" for r in rows])
    test = np.array([split_of(r) == "test" for r in rows])
    if not used or dev.sum() == 0 or test.sum() == 0:
        return None
    x = _design(rows, by_case, used)
    y = np.array([bool(acceptable(r["label"])) for r in rows])
    w = fit_logistic(x[dev], y[dev].astype(float))
    score = np.c_[x, np.ones(len(x))] @ w
    threshold = max(np.unique(score[dev]),
                    key=lambda t: _kappa(list(y[dev]), list(score[dev] >= t)))

    def agreement(sel: np.ndarray) -> dict:
        labels, accepted = list(y[sel]), list(score[sel] >= threshold)
        return {"n": int(sel.sum()), "accuracy": float(np.mean(y[sel] == (score[sel] >= threshold))),
                "kappa": _kappa(labels, accepted)}

    langs = np.array([lang_of(r) for r in rows])
    return {"metrics": used, "dev": agreement(dev), "test": agreement(test),
            "test_by_language": {str(lang): agreement(test & (langs == lang))
                                 for lang in sorted(set(langs[test]))},
            "weights": {m: round(float(v), 3) for m, v in zip(used, w[:-1])}}
