"""The public benchmark's report (validation/public/), as LLM-AggreFact reports one.

Per set, on its held-out `test` split:
- ROC AUC of every metric evalbeam computes without a reference, and of three
  simple baselines that always sit beside them: the share of the answer's
  content words found in the contexts, bigram precision (the share of the
  answer's word bigrams found in the contexts; content-word share for a one-word
  answer) and TF-IDF cosine between the answer and its contexts (IDF over the
  set's contexts and answers);
- balanced accuracy of the grounding decision (a metric against its fitted cut:
  accepted when on the good side of it);
- the verdict as an abstaining classifier: the decided share (PASS + FAIL), the
  accuracy of decided verdicts (PASS on a supported answer, FAIL on an
  unsupported one), the share of unsupported answers that PASS and of supported
  answers that FAIL.

Pure functions over (rows, metric values); bench/validity.py runs evalbeam and
feeds them.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from typing import Callable, Iterable, Mapping, Sequence

from pipeline.postrun.agreement import acceptable, roc_auc

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from stop_words import get_stop_words  # the English list the baselines always use
    return frozenset(get_stop_words("en"))


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text or "")]


def content_word_share(answer: str, contexts: Sequence[str]) -> float | None:
    """Share of the answer's content words (not stop words) found in the contexts."""
    stops = _stop_words()
    content = [w for w in words(answer) if w not in stops]
    if not content:
        return None
    found = set(words(" ".join(contexts)))
    return sum(1 for w in content if w in found) / len(content)


def bigram_precision(answer: str, contexts: Sequence[str]) -> float | None:
    """Share of the answer's word bigrams found in the contexts (content-word
    share for a one-word answer)."""
    tokens = words(answer)
    if len(tokens) < 2:
        return content_word_share(answer, contexts)
    ctx = words(" ".join(contexts))
    found = set(zip(ctx, ctx[1:]))
    pairs = list(zip(tokens, tokens[1:]))
    return sum(1 for p in pairs if p in found) / len(pairs)


def idf_table(texts: Iterable[str]) -> Callable[[str], float]:
    """Smoothed IDF (log((1 + n) / (1 + df)) + 1) over the texts as documents."""
    df: Counter = Counter()
    n = 0
    for text in texts:
        n += 1
        df.update(set(words(text)))
    return lambda w: math.log((1 + n) / (1 + df.get(w, 0))) + 1.0


def tfidf_cosine(answer: str, contexts: Sequence[str], idf: Callable[[str], float]
                 ) -> float | None:
    a, c = Counter(words(answer)), Counter(words(" ".join(contexts)))
    if not a or not c:
        return None
    va = {w: n * idf(w) for w, n in a.items()}
    vc = {w: n * idf(w) for w, n in c.items()}
    dot = sum(v * vc.get(w, 0.0) for w, v in va.items())
    norm = math.sqrt(sum(v * v for v in va.values())) * math.sqrt(sum(v * v for v in vc.values()))
    return dot / norm if norm else None


BASELINES = ("content_word_share", "bigram_precision", "tfidf_cosine")


def baseline_values(rows: Sequence[Mapping]) -> dict[str, dict[str, float | None]]:
    """{case_id: {baseline: value}} for one set's rows (the IDF is the set's)."""
    idf = idf_table([r["answer"] or "" for r in rows]
                    + [" ".join(r["contexts"] or ()) for r in rows])
    return {r["case_id"]: {
        "content_word_share": content_word_share(r["answer"] or "", r["contexts"] or ()),
        "bigram_precision": bigram_precision(r["answer"] or "", r["contexts"] or ()),
        "tfidf_cosine": tfidf_cosine(r["answer"] or "", r["contexts"] or (), idf)}
        for r in rows}


def balanced_accuracy(labels: Sequence[bool], accepted: Sequence[bool]) -> float | None:
    """Mean of the recall on supported and on unsupported answers (None when a
    class is empty)."""
    pos = [a for y, a in zip(labels, accepted) if y]
    neg = [a for y, a in zip(labels, accepted) if not y]
    if not pos or not neg:
        return None
    return (sum(pos) / len(pos) + sum(1 for a in neg if not a) / len(neg)) / 2


def selective(labels: Sequence[bool], verdicts: Sequence[str]) -> dict:
    """The verdict as a classifier that may abstain (WARN, ERROR)."""
    n = len(labels)
    decided = [(y, v) for y, v in zip(labels, verdicts) if v in ("PASS", "FAIL")]
    right = sum(1 for y, v in decided if (v == "PASS") == y)
    good = [v for y, v in zip(labels, verdicts) if y]
    bad = [v for y, v in zip(labels, verdicts) if not y]
    return {"n": n, "decided": len(decided) / n if n else None,
            "decided_accuracy": right / len(decided) if decided else None,
            "bad_passed": bad.count("PASS") / len(bad) if bad else None,
            "good_failed": good.count("FAIL") / len(good) if good else None,
            "pass_ba": balanced_accuracy(labels, [v == "PASS" for v in verdicts])}


def verdicts_with(rows: Sequence[Mapping], by_case: Mapping[str, Mapping[str, float | None]],
                  rules: Sequence, metric: str, values: Mapping[str, float]) -> list[str]:
    """Every row's verdict under `rules` (otherwise PASS) from its metric values,
    with `metric`'s value replaced by `values[case_id]` where the run has one: the
    default verdict with its fitted model and cut-offs refitted without the set."""
    from schemas.records import MetricResult
    from transforms.decide.rules import decide
    out = []
    for r in rows:
        mine = dict(by_case.get(r["case_id"], {}))
        if mine.get(metric) is not None and r["case_id"] in values:
            mine[metric] = values[r["case_id"]]
        scores = {m: MetricResult(v) if v is not None else MetricResult.null("null")
                  for m, v in mine.items()}
        out.append(decide(scores, rules, "PASS", r.get("error"))[0])
    return out


def auc_of(rows: Sequence[Mapping], values: Mapping[str, Mapping[str, float | None]],
           name: str, higher_is_better: bool = True) -> float | None:
    pairs = [(values[r["case_id"]][name], bool(acceptable(r["label"]))) for r in rows
             if values.get(r["case_id"], {}).get(name) is not None]
    if not pairs:
        return None
    return roc_auc([v for v, _ in pairs], [y for _, y in pairs], higher_is_better)


def set_report(rows: Sequence[Mapping], by_case: Mapping[str, Mapping[str, float | None]],
               lower: set[str], decision: tuple[str, float] | None = None,
               skip: Iterable[str] = ()) -> dict:
    """One set's figures from its labelled rows (each with case_id, answer,
    contexts, label and verdict) and their metric values. `decision`: the metric
    and cut of the grounding decision (accepted when value >= cut, or <= for a
    lower-is-better metric); without it the decision is the verdict's PASS."""
    labels = [bool(acceptable(r["label"])) for r in rows]
    names = sorted({m for v in by_case.values() for m in v} - set(skip))
    metrics = {m: auc_of(rows, by_case, m, m not in lower) for m in names}
    base = baseline_values(rows)
    out = {"n": len(rows), "supported": sum(labels),
           "metrics": {m: a for m, a in metrics.items() if a is not None},
           "null": sorted(m for m, a in metrics.items() if a is None),
           "baselines": {b: auc_of(rows, base, b) for b in BASELINES},
           "verdict": selective(labels, [r["verdict"] for r in rows])}
    if decision is not None:
        metric, cut = decision
        values = [by_case.get(r["case_id"], {}).get(metric) for r in rows]
        hib = metric not in lower
        accepted = [v is not None and (v >= cut if hib else v <= cut) for v in values]
        out["decision"] = {"metric": metric, "cut": cut,
                           "balanced_accuracy": balanced_accuracy(labels, accepted)}
    else:
        out["decision"] = {"metric": "verdict PASS", "cut": None,
                           "balanced_accuracy": out["verdict"]["pass_ba"]}
    return out
