"""groundedness: how likely the contexts support the answer, by a small fitted model.

Offline and without a reference. A few signals of the answer against its
contexts, each measured on the public benchmark (validation/public/) to rank
supported above unsupported answers:

- content: share of the answer's content words (stems, stop words left out)
  found in the contexts;
- bigrams: share of the answer's word bigrams found in the contexts (content
  for a one-word answer);
- best_sentence: mean over the answer's sentences of the largest share of its
  content words that one context sentence holds (a claim stitched together
  from words scattered over the contexts scores lower);
- unsupported: log(1 + the answer's figures, amounts, dates, times and names
  that neither the contexts nor the question support), as the facts layer
  checks them for `hallucination` (values compared by value, names by their
  words in order in a context).

Measured on the same sets and left out, as they did not raise the held-out
AUC beside these: the content and bigram shares of the answer's least
supported sentence, the shares of its figures and capitalised words found in
the contexts (the facts layer's count reads both better), and the count of
its content words that neither the contexts nor the question use.

    groundedness = 1 / (1 + exp(-(intercept + sum_i weight_i * (x_i - mean_i) / scale_i)))

Higher is better (a probability-like score in [0, 1]). The weights, means and
scales live in transforms/data/groundedness.json, fitted by
`python bench/fit_groundedness.py` (logistic regression on the dev splits of
the committed public sets, each set weighted alike); that command also reports
the fit leave-one-set-out. Null with a reason when the answer has no content word
to look for (only stop words, or a bare yes or no: nothing a passage states) or
is written in another language than its contexts (word overlap means nothing
across languages). The default verdict WARNs on such a null (it cannot tell).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from schemas.records import MetricResult, is_blank
from transforms.score.facts.sentences import split_sentences
from transforms.score.facts.support import unsupported_fact_count
from transforms.text.languages import detect_language, other_language
from transforms.text.scripts import UNSEGMENTED, unsegmented
from transforms.text.terms import NO_CONTENT, content_stems
from transforms.text.tokens import tokenize

MODEL_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), "data", "groundedness.json")
SIGNALS = ("content", "bigrams", "best_sentence", "unsupported")


@dataclass(frozen=True)
class _Sources:
    """What the contexts hold, built once per distinct contexts."""
    lang: str
    stems: frozenset[str]
    bigrams: frozenset[tuple[str, str]]
    sentences: tuple[frozenset[str], ...]  # each context sentence's content stems


@lru_cache(maxsize=256)
def _sources(contexts: tuple[str, ...]) -> _Sources:
    joined = "\n".join(contexts)
    lang = detect_language(joined)
    tokens = tokenize(joined)
    sentences = tuple(frozenset(content_stems(tokenize(s), lang))
                      for c in contexts for s in split_sentences(c))
    return _Sources(lang, frozenset(content_stems(tokens, lang)),
                    frozenset(zip(tokens, tokens[1:])), tuple(s for s in sentences if s))


def _share(items: Sequence, found) -> float | None:
    return sum(1 for x in items if x in found) / len(items) if items else None


def _support(tokens: list[str], src: _Sources) -> tuple[float, float]:
    """(content share, bigram share) of one stretch of the answer."""
    content = _share(content_stems(tokens, src.lang), src.stems)
    content = 1.0 if content is None else content
    bigrams = _share(list(zip(tokens, tokens[1:])), src.bigrams)
    return content, content if bigrams is None else bigrams


def _best_sentence(stems: set[str], src: _Sources) -> float:
    if not stems or not src.sentences:
        return 1.0
    return max(len(stems & s) for s in src.sentences) / len(stems)


def signals(question: str, contexts: Sequence[str], answer: str) -> dict[str, float] | None:
    """The model's inputs for one answer; None when the answer has no content word
    (none, or only stop words and a yes or no: nothing to look for in the contexts)."""
    tokens = tokenize(answer)
    src = _sources(tuple(contexts))
    if not content_stems(tokens, src.lang):
        return None
    content, bigrams = _support(tokens, src)
    best = [_best_sentence(set(content_stems(words, src.lang)), src)
            for words in map(tokenize, split_sentences(answer)) if words]
    usable = [c for c in contexts if not is_blank(c)]
    unsupported = unsupported_fact_count(answer, usable, question or "") if usable else 0
    return {"content": content, "bigrams": bigrams,
            "best_sentence": sum(best) / len(best) if best else 1.0,
            "unsupported": math.log1p(unsupported)}


@dataclass(frozen=True)
class Model:
    """A logistic regression over standardised signals, as fitted."""
    signals: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    intercept: float

    def score(self, x: dict[str, float]) -> float:
        z = self.intercept + sum(w * (x[s] - m) / sc for s, m, sc, w in
                                 zip(self.signals, self.mean, self.scale, self.weights))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def to_json(self) -> dict:
        return {"signals": list(self.signals), "mean": list(self.mean),
                "scale": list(self.scale), "weights": list(self.weights),
                "intercept": self.intercept}


@lru_cache(maxsize=1)
def load_model(path: str = MODEL_PATH) -> Model:
    with open(path, encoding="utf-8") as fh:
        fitted = json.load(fh)["model"]
    return Model(tuple(fitted["signals"]), tuple(fitted["mean"]), tuple(fitted["scale"]),
                 tuple(fitted["weights"]), float(fitted["intercept"]))


@lru_cache(maxsize=1)
def fitted_cuts(path: str = MODEL_PATH) -> dict:
    """The default verdict's cut-offs on this score as bench/fit_groundedness.py
    fitted them with the model: {fail_below, pass_from, long_answers:
    {above_chars, pass_from} | None, ...} (FAIL below the first, PASS from the
    second up, or from the long answers' one above their edge, WARN between)."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)["verdict_cuts"]


def verdict_cuts(path: str = MODEL_PATH) -> tuple[float, float]:
    """(fail_below, pass_from) of fitted_cuts."""
    cuts = fitted_cuts(path)
    return float(cuts["fail_below"]), float(cuts["pass_from"])


def long_answer_cut(path: str = MODEL_PATH) -> tuple[float, float] | None:
    """(above_chars, pass_from): the higher PASS cut-off the fit found for answers
    longer than above_chars characters (answer_length), or None (one cut-off)."""
    long = fitted_cuts(path).get("long_answers")
    return None if not long else (float(long["above_chars"]), float(long["pass_from"]))


def groundedness(question: str, contexts: Sequence[str], answer: str | None,
                 model: Model | None = None) -> MetricResult:
    if answer is None:
        return MetricResult.null("no answer")
    contexts = [c for c in contexts or () if not is_blank(c)]
    if not contexts:  # only blank passages: nothing to hold the answer, as hallucination says
        return MetricResult.null("no contexts")
    if unsegmented(answer, "\n".join(contexts)):
        return MetricResult.null(UNSEGMENTED)
    other = other_language(answer, "\n".join(contexts))
    if other is not None:
        return MetricResult.null(f"the answer is in {other[0]}, the contexts in {other[1]}: "
                                 "word overlap says nothing across languages")
    x = signals(question, contexts, answer)
    if x is None:
        return MetricResult.null(NO_CONTENT)
    model = model or load_model()
    return MetricResult(model.score(x), {k: round(v, 4) for k, v in x.items()})
