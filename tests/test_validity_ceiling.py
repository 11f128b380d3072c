"""The fitted ceilings behind VALIDITY.md's "how far the offline metrics can go".

They are measurements that decide whether a goal needs a better signal, so they
must count the right pairs and learn a metric's direction, not assume it."""
from __future__ import annotations

import random

import pytest

from bench.validity_ceiling import offline_ceiling, pairwise_ceiling


def _labelled(questions: int = 40, seed: int = 7):
    """Per question: one good answer, two hallucinated ones and one off-topic one.
    `signal` ranks good above hallucinated, `inverted` the other way round,
    `noise` not at all; the off-topic answer has the best `signal` of all, and
    only `inverted` (high for it too) tells it from the good one."""
    rnd = random.Random(seed)
    rows, by_case = [], {}
    for q in range(questions):
        split = "dev" if q % 2 == 0 else "test"
        for n, (kind, label, level, inverted) in enumerate((("grounded", "PASS", 0.8, 0.2),
                                                             ("wrong_number", "FAIL", 0.3, 0.7),
                                                             ("swapped_entity", "FAIL", 0.35, 0.65),
                                                             ("off_topic", "FAIL", 0.95, 0.9))):
            cid = f"q{q}-{n}"
            rows.append({"case_id": cid, "label": label,
                         "tags": {"kind": kind, "question": q, "split": split}})
            by_case[cid] = {"signal": level + rnd.uniform(-0.05, 0.05),
                            "inverted": inverted + rnd.uniform(-0.05, 0.05),
                            "noise": rnd.random()}
    return rows, by_case


def _pairwise(rows, by_case, metrics):
    return pairwise_ceiling(rows, by_case, metrics, lambda r: r["tags"]["split"],
                            lambda r: r["tags"]["question"], lambda r: r["tags"]["kind"],
                            {"wrong_number", "swapped_entity"})


def test_pairwise_ceiling_counts_only_the_pairs_asked_for():
    rows, by_case = _labelled()
    c = _pairwise(rows, by_case, ["signal"])
    # 20 questions per split, 1 good x 2 hallucinated answers each; off-topic is not paired
    assert c["dev"]["pairs"] == c["test"]["pairs"] == 40
    assert c["test"]["accuracy"] == 1.0
    assert c["weights"]["signal"] > 0


def test_pairwise_ceiling_reports_the_best_single_metric_on_the_same_pairs():
    rows, by_case = _labelled()
    c = _pairwise(rows, by_case, ["noise", "inverted"])
    assert c["best_single"]["metric"] == "inverted"  # chosen, with its direction, on dev
    assert c["best_single"]["test"] == {"pairs": 40, "accuracy": 1.0}


def test_pairwise_ceiling_learns_a_lower_is_better_metric():
    rows, by_case = _labelled()
    c = _pairwise(rows, by_case, ["inverted"])
    assert c["test"]["accuracy"] == 1.0
    assert c["weights"]["inverted"] < 0


def test_pairwise_ceiling_of_noise_is_near_chance_and_ties_count_half():
    rows, by_case = _labelled(questions=200)
    c = _pairwise(rows, by_case, ["noise"])
    assert 0.35 < c["test"]["accuracy"] < 0.65
    for values in by_case.values():
        values["noise"] = 0.5  # every pair tied
    rows2, _ = _labelled(questions=200)
    c = _pairwise(rows2, {k: dict(v, signal=0.5) for k, v in by_case.items()}, ["signal"])
    assert c["test"]["accuracy"] == pytest.approx(0.5)


def test_pairwise_ceiling_needs_pairs_in_both_splits():
    rows, by_case = _labelled()
    only_dev = [r for r in rows if r["tags"]["split"] == "dev"]
    assert _pairwise(only_dev, by_case, ["signal"]) is None


def test_offline_ceiling_on_a_separable_set():
    rows, by_case = _labelled()
    c = offline_ceiling(rows, by_case, ["signal", "inverted", "noise"],
                        lambda r: r["tags"]["split"], lambda r: "en")
    # off-topic answers have the highest `signal`: only the combination of `signal` with
    # a negative weight on `inverted` separates them, so a perfect held-out score shows it
    assert c["test"]["n"] == 80
    assert c["test"]["accuracy"] >= 0.95 and c["test"]["kappa"] >= 0.85
    assert c["weights"]["signal"] > 0 > c["weights"]["inverted"]
    alone = offline_ceiling(rows, by_case, ["signal"], lambda r: r["tags"]["split"],
                            lambda r: "en")
    # one threshold on `signal` accepts the off-topic answers with the good ones
    assert alone["test"]["accuracy"] <= 0.8
