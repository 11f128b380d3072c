"""How far can offline metrics go? A fitted ceiling for the verdict goals.

A verdict preset is a few thresholds; no preset made of the offline metrics
can agree with people better than the best *weighted combination* of all of
them. This fits one (an L2-regularised logistic regression over every ranked
metric, standardised, a missing value counted as the mean) on the `dev`
questions, picks the accept threshold with the best kappa there, and reports
accuracy and kappa on the held-out `test` questions, overall and per language.

`pairwise_ceiling` does the same for a pairwise goal (grounded answers ranked
above hallucinated ones of the same question): the best linear combination
of every metric as one score, fitted on the `dev` questions' pairs, measured
on the `test` questions' pairs.

It is a measurement, not a product rule: a figure below a goal says the goal
needs a better signal (a judge, an NLI model), not other thresholds.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Collection, Sequence

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


def _usable(rows: list[dict], by_case: dict, metrics: Sequence[str]) -> tuple[list[dict], list[str]]:
    """The labelled rows, and the metrics with a value on more than one of them."""
    rows = [r for r in rows if acceptable(r.get("label")) is not None]
    used = [m for m in metrics
            if sum(1 for r in rows if by_case.get(r["case_id"], {}).get(m) is not None) > 1]
    return rows, used


def offline_ceiling(rows: list[dict], by_case: dict, metrics: Sequence[str],
                    split_of: Callable[[dict], str | None],
                    lang_of: Callable[[dict], str | None]) -> dict | None:
    """Held-out agreement of the best linear combination of `metrics`."""
    rows, used = _usable(rows, by_case, metrics)
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


def pairwise_ceiling(rows: list[dict], by_case: dict, metrics: Sequence[str],
                     split_of: Callable[[dict], str | None],
                     question_of: Callable[[dict], object], kind_of: Callable[[dict], str | None],
                     bad_kinds: Collection[str]) -> dict | None:
    """Held-out pairwise accuracy (good > bad of `bad_kinds`, within a question,
    ties one half) of the best linear combination of `metrics`: a logistic
    regression on the pairs' differences of standardised values (both orders,
    so the fit is symmetric), fitted on the `dev` questions."""
    rows, used = _usable(rows, by_case, metrics)
    if not used:
        return None
    x = _design(rows, by_case, used)

    def differences(split: str) -> np.ndarray:
        groups: dict = defaultdict(lambda: ([], []))
        for i, r in enumerate(rows):
            if split_of(r) != split:
                continue
            if acceptable(r["label"]):
                groups[question_of(r)][0].append(i)
            elif kind_of(r) in bad_kinds:
                groups[question_of(r)][1].append(i)
        return np.array([x[g] - x[b] for good, bad in groups.values() for g in good for b in bad]
                        ).reshape(-1, len(used))

    dev, test = differences("dev"), differences("test")
    if not len(dev) or not len(test):
        return None
    w = fit_logistic(np.r_[dev, -dev], np.r_[np.ones(len(dev)), np.zeros(len(dev))])[:-1]

    def accuracy(d: np.ndarray, weights: np.ndarray) -> dict:
        s = d @ weights
        return {"pairs": int(len(s)), "accuracy": float(((s > 0).sum() + 0.5 * (s == 0).sum()) / len(s))}

    # the best single metric, its direction and choice made on dev as well: the
    # combination is worth having only if it beats this on the same test pairs
    singles = [(accuracy(dev, np.sign(dev[:, k].sum()) * np.eye(len(used))[k])["accuracy"], k)
               for k in range(len(used))]
    best = max(singles)[1]
    single = np.sign(dev[:, best].sum()) * np.eye(len(used))[best]
    return {"metrics": used, "dev": accuracy(dev, w), "test": accuracy(test, w),
            "best_single": {"metric": used[best], "dev": accuracy(dev, single),
                            "test": accuracy(test, single)},
            "weights": {m: round(float(v), 3) for m, v in zip(used, w)}}
