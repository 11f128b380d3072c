"""Reference-overlap metrics: sentence BLEU and ROUGE-1/2/L.

Both must be comparable with published numbers, so they reproduce the
reference libraries exactly:

* BLEU is sacrebleu's: one shared `BLEU(effective_order=True)` object (the
  settings of `sacrebleu.sentence_bleu`) turns the statistics into the score,
  and sacrebleu's own 13a tokenizer functions tokenise (behind a smaller cache
  of ours, `tokenize_13a`); only the integer n-gram statistics are counted
  here, with C-level Counters instead of sacrebleu's per-n-gram loop (the
  same integers, so the same floats).
* ROUGE re-implements `rouge_score.rouge_scorer.RougeScorer.score` on top of
  rouge-score's own tokenizer and F-measure, but tokenises each text once for
  all three variants and computes the LCS with a bit-parallel algorithm, so a
  megabyte-long answer costs a fraction of a second instead of an O(n·m) table.
"""
from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any, Sequence

from types import SimpleNamespace
from rouge_score import tokenize as rouge_tokenize
from rouge_score.scoring import fmeasure
from sacrebleu.metrics import BLEU
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.tokenizers.tokenizer_re import TokenizerRegexp

from schemas.records import MetricResult, is_blank
from transforms.score.metrics.references import best_result
from transforms.text.languages import other_language
from transforms.text.scripts import UNSEGMENTED, UNSPACED_RANGES, unsegmented
from transforms.text.stemming import porter_stem, stem
from transforms.text.tokens import tokenize

ROUGE_TYPES: tuple[str, ...] = ("rouge1", "rouge2", "rougeL")

# The settings of sacrebleu.sentence_bleu: 13a tokenizer, exp smoothing,
# effective order. Its final computation scores every pair (its tokenizer: tokenize_13a).
_BLEU = BLEU(effective_order=True)

# Lines tokenize_13a remembers: every reference of a run (they recur) and the
# recent answers, in ~35 MB (a line and its tokens, ~2 KB each for 900-char answers).
TOKENIZER_CACHE_LINES = 1 << 14


class _UncachedRegexp:
    """sacrebleu's TokenizerRegexp without its lru_cache (the same function)."""

    def __init__(self) -> None:
        self._tokenizer = TokenizerRegexp()

    def __call__(self, line: str) -> str:
        return TokenizerRegexp.__call__.__wrapped__(self._tokenizer, line)


_TOKENIZER_13A = Tokenizer13a()
_TOKENIZER_13A._post_tokenizer = _UncachedRegexp()


@lru_cache(maxsize=TOKENIZER_CACHE_LINES)
def tokenize_13a(line: str) -> str:
    """sacrebleu's 13a tokenisation of a line (`BLEU._preprocess_segment` of
    sentence_bleu's settings): sacrebleu's own Tokenizer13a and TokenizerRegexp
    code, called past their two lru_caches of 65,536 lines each.

    Those caches keep every distinct line with its tokens, twice: on the
    benchmark's 900-character answers ~2.2 KB a line, 142 MB per worker once
    full. A worker fills them only after ~125,000 distinct lines (~500,000
    rows of the synthetic input), so they were a third of what grew from
    100,000 to 1,000,000 rows. This one cache of 16,384 lines fills within
    ~35,000 rows and keeps what repeats (references, repeated answers):
    tokenising a line costs ~0.3 ms, a miss rate of 0.21 instead of 0.13 at
    500,000 rows of one worker (~0.05 ms a row). Same code, same tokens."""
    return Tokenizer13a.__call__.__wrapped__(_TOKENIZER_13A, line)


def _bleu_tokens(text: str) -> list[str]:
    """`_BLEU._preprocess_segment(text).split()` (sentence_bleu does not lowercase)."""
    return tokenize_13a(text.rstrip()).split()


@lru_cache(maxsize=64)
def _bleu_signature(nrefs: int = 1, tokenize: str = "13a") -> str:
    """sacrebleu's signature string for `nrefs` references. sacrebleu knows the
    number of references only after scoring, so one pair is scored once by an
    object of the same settings."""
    probe = BLEU(effective_order=True, tokenize=tokenize)
    probe.sentence_score("a", ["a"] * nrefs)
    return probe.get_signature().format()


# Scripts 13a cannot split into words. Han: a character is about a word
# (sacrebleu's `zh`, what WMT scores Chinese with). Kana, Thai, Lao, Myanmar,
# Khmer: no spaces between words and no segmenter installed (sacrebleu's
# `ja-mecab` needs MeCab), so characters (`char`). Arabic and the Indic scripts
# put spaces between words but have their own punctuation ("،", "؟", "।"),
# which 13a leaves on the word; `intl` splits Unicode punctuation.
_KANA_OR_UNSPACED = re.compile(f"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9d{UNSPACED_RANGES}]")
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")
_OWN_PUNCTUATION = re.compile("[\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\u0900-\u0dff]")


def bleu_tokenizer(texts: Sequence[str]) -> str:
    """The sacrebleu tokenizer BLEU reads these texts (answer and references)
    with: `13a` (sacrebleu's default) unless one of them writes a script it
    cannot split, then `char`, `zh` or `intl` (see above), one for all of them
    so the answer's n-grams and the references' are alike."""
    if all(t.isascii() for t in texts):  # the common case, without a regex
        return "13a"
    if any(_KANA_OR_UNSPACED.search(t) for t in texts):
        return "char"
    if any(_HAN.search(t) for t in texts):
        return "zh"
    if any(_OWN_PUNCTUATION.search(t) for t in texts):
        return "intl"
    return "13a"


@lru_cache(maxsize=None)
def _bleu_for(tokenize: str) -> BLEU:
    """sentence_bleu's settings with another of sacrebleu's tokenizers."""
    return BLEU(effective_order=True, tokenize=tokenize)


def reference_list(expected: str | Sequence[str] | None) -> list[str] | None:
    """One reference or several, as a list (None stays None)."""
    if expected is None or isinstance(expected, str):
        return None if expected is None else [expected]
    return list(expected) or None


def same_language(answer: str, refs: list[str]) -> tuple[list[str], str | None]:
    """(the references in the answer's language, the null reason when none is):
    n-grams of a Spanish answer and an English reference share only figures and
    names, so their BLEU or ROUGE is a low number that says nothing about the
    answer. `other_language` decides, as for hallucination and groundedness."""
    kept, reason = [], None
    for ref in refs:
        other = None if is_blank(ref) else other_language(answer, ref)
        if other is None:
            kept.append(ref)
        elif reason is None:
            reason = (f"the answer is in {other[0]}, the expected answer in {other[1]}: "
                      "n-gram overlap says nothing across languages")
    return kept, (reason if not kept else None)


def bleu(answer: str | None, expected: str | Sequence[str] | None) -> MetricResult:
    """Sentence BLEU in [0, 1]: sacrebleu.sentence_bleu(answer, references).score / 100,
    with one reference or several (sacrebleu's multi-reference BLEU: n-gram
    counts clipped by the maximum over the references, the closest reference
    length for the brevity penalty).

    Null when there is no reference (empty or whitespace only), or every
    reference is in another language than the answer (`same_language`; the
    others are left out): sacrebleu would return 0 or a figure's worth, but that
    would say nothing about the answer.
    """
    refs = reference_list(expected)
    if answer is None:
        return MetricResult.null("no answer")
    if refs is None:
        return MetricResult.null("no expected answer")
    if all(is_blank(r) for r in refs):
        return MetricResult.null("empty expected answer")
    refs, other = same_language(answer, refs)
    if other:
        return MetricResult.null(other)
    tokenizer = bleu_tokenizer([answer, *refs])
    score = sentence_bleu(answer, refs, tokenizer)
    return MetricResult(
        min(1.0, score.score / 100.0),  # sacrebleu can give 100.00000000000004
        {
            "precisions": [p / 100.0 for p in score.precisions],
            "bp": score.bp,
            "sys_len": score.sys_len,
            "ref_len": score.ref_len,
            "signature": _bleu_signature(len(refs), tokenizer),
        },
    )


def _bleu_ngrams(tokens: list[str], n: int) -> Counter:
    """The n-grams of a token list with their counts (unigrams as plain tokens)."""
    if n == 1:
        return Counter(tokens)
    return Counter(zip(*(tokens[i:] for i in range(n))))


def bleu_statistics(hypothesis: list[str], references: list[list[str]],
                    max_order: int = 4) -> list[int]:
    """sacrebleu's sufficient statistics of one segment, [sys_len, ref_len,
    correct_1..n, total_1..n], from its tokens: hypothesis n-gram counts clipped by
    the maximum count over the references, the closest reference length (the
    shorter on ties). Integers, so equal to BLEU._extract_corpus_statistics'
    whatever the order of the sums; counted with Counter over zipped slices
    instead of sacrebleu's per-n-gram Python loop."""
    hyp_len = len(hypothesis)
    ref_len = _BLEU._get_closest_ref_len(hyp_len, [len(r) for r in references])
    correct, total = [], []
    for n in range(1, max_order + 1):
        hyp = _bleu_ngrams(hypothesis, n)
        ref = _bleu_ngrams(references[0], n)
        for other in references[1:]:
            ref |= _bleu_ngrams(other, n)  # per n-gram, the maximum count over the references
        total.append(max(hyp_len - n + 1, 0))
        correct.append(sum(min(hyp[g], ref[g]) for g in hyp.keys() & ref.keys()))
    return [hyp_len, ref_len, *correct, *total]


def sentence_bleu(answer: str, references: Sequence[str], tokenize: str = "13a") -> Any:
    """`BLEU(effective_order=True, tokenize=tokenize).sentence_score(answer,
    references)`, the same BLEUScore: sacrebleu's own tokenizer code (13a:
    `tokenize_13a`) and its own final computation from the statistics; only
    the n-gram counting is done faster (`bleu_statistics`)."""
    if tokenize == "13a":
        split = _bleu_tokens
    else:
        def split(text: str) -> list[str]:
            return _bleu_for(tokenize)._preprocess_segment(text).split()
    hyp = split(answer)
    refs = [split(r) for r in references]
    return _BLEU._compute_score_from_stats(bleu_statistics(hyp, refs, _BLEU.max_ngram_order))


# rouge-score's Porter stemmer (same `stem`), memoised: stemming dominates ROUGE's cost.
_STEMMER = SimpleNamespace(stem=porter_stem)


def rouge_tokens(text: str, use_stemmer: bool = False, unicode: bool = False) -> list[str]:
    """rouge-score's DefaultTokenizer tokens: lower-cased [a-z0-9] runs, optionally
    stemmed; with `unicode`, UnicodeRougeTokenizer's."""
    if unicode:
        return UnicodeRougeTokenizer(use_stemmer).tokenize(text)
    return rouge_tokenize.tokenize(text, _STEMMER if use_stemmer else None)


class UnicodeRougeTokenizer:
    """A rouge-score tokenizer (`RougeScorer(tokenizer=...)` needs only its
    `tokenize`; rouge_score.tokenizers' base class would import all of nltk at
    start-up) for text that is not ASCII: evalbeam's words in any script (`transforms.text.tokens.tokenize`:
    NFKC, lower-cased, letters with their combining marks, each Han or kana
    character a token), ASCII words Porter-stemmed as rouge-score stems them
    when `use_stemmer`. rouge-score's default keeps only [a-z0-9]: "東京は日本の首都で、
    人口は約1400万人です。" was the one token "1400", and a Japanese answer
    sharing that figure scored ROUGE-1 1.0."""

    def __init__(self, use_stemmer: bool = False) -> None:
        self.use_stemmer = use_stemmer

    def tokenize(self, text: str) -> list[str]:
        words = tokenize(text)
        return [stem(w) for w in words] if self.use_stemmer else words


def rouge_reads_unicode(*texts: str) -> bool:
    """ROUGE reads the texts with UnicodeRougeTokenizer: one of them has a letter
    or digit rouge-score's default tokenizer would drop (Chinese, Arabic, the
    "é" of "café"). ASCII texts keep rouge-score's default, so English is as before."""
    return any(not t.isascii() and any(c.isalnum() and not c.isascii() for c in t) for t in texts)



def _ngram_counts(tokens: list[str], n: int) -> Counter:
    if n == 1:
        return Counter(tokens)
    return Counter(zip(*(tokens[i:] for i in range(n))))


def _score_ngrams(target: list[str], prediction: list[str], n: int) -> tuple[float, float, float]:
    """rouge_scorer._score_ngrams: counts clipped per n-gram, max(count, 1) denominators."""
    target_ngrams = _ngram_counts(target, n)
    prediction_ngrams = _ngram_counts(prediction, n)
    overlap = sum(min(c, prediction_ngrams[g]) for g, c in target_ngrams.items())
    target_count = max(len(target) - n + 1, 0)
    prediction_count = max(len(prediction) - n + 1, 0)
    precision = overlap / max(prediction_count, 1)
    recall = overlap / max(target_count, 1)
    return precision, recall, fmeasure(precision, recall)


def _match_masks(seq: list[str], keep: set[str]) -> dict[str, int]:
    """Bit i of masks[tok] is set when seq[i] == tok (only for tokens in `keep`)."""
    n = len(seq)
    if n <= 4096:
        masks: dict[str, int] = {}
        for i, tok in enumerate(seq):
            if tok in keep:
                masks[tok] = masks.get(tok, 0) | (1 << i)
        return masks
    # Long sequences: OR-ing ever larger ints is quadratic, so set bits in a
    # byte buffer per token and convert once.
    positions: dict[str, list[int]] = {}
    for i, tok in enumerate(seq):
        if tok in keep:
            positions.setdefault(tok, []).append(i)
    nbytes = (n + 7) // 8
    masks = {}
    for tok, where in positions.items():
        buf = bytearray(nbytes)
        for i in where:
            buf[i >> 3] |= 1 << (i & 7)
        masks[tok] = int.from_bytes(buf, "little")
    return masks


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence of two token lists.

    Bit-parallel (Allison-Dix / Hyyrö 2004) with Python ints as bit vectors:
    one add, one subtract and a few bitwise ops per token of the longer list,
    each over ⌈len(shorter)/64⌉ machine words, instead of an O(n·m) table.
    Tokens absent from the other list can never match, so they are dropped
    first; that does not change the LCS.
    """
    shared = set(a)
    shared.intersection_update(b)
    if not shared:
        return 0
    a = [t for t in a if t in shared]
    b = [t for t in b if t in shared]
    if len(a) > len(b):
        a, b = b, a
    masks = _match_masks(a, shared)
    all_ones = (1 << len(a)) - 1
    v = all_ones  # zero bits of v mark the LCS "steps" found so far
    get = masks.get
    for tok in b:
        u = v & get(tok, 0)
        v = ((v + u) | (v - u)) & all_ones
    return len(a) - v.bit_count()


def _score_lcs(target: list[str], prediction: list[str]) -> tuple[float, float, float]:
    """rouge_scorer._score_lcs with the LCS length computed bit-parallel."""
    if not target or not prediction:
        return 0.0, 0.0, 0.0
    lcs = lcs_length(target, prediction)
    precision = lcs / len(prediction)
    recall = lcs / len(target)
    return precision, recall, fmeasure(precision, recall)


def _as_result(scores: tuple[float, float, float], **details: Any) -> MetricResult:
    precision, recall, f1 = scores
    return MetricResult(f1, {"precision": precision, "recall": recall, **details})


def rouge(answer: str | None, expected: str | None, use_stemmer: bool = False,
          unicode: bool | None = None) -> dict[str, MetricResult]:
    """ROUGE-1, ROUGE-2 and ROUGE-L F1 of the answer against the expected answer.

    Equal to RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer).score(
    target=expected, prediction=answer), including its conventions (e.g. a
    one-token reference gives ROUGE-2 = 0); when a text is not ASCII
    (`rouge_reads_unicode`), to the same with tokenizer=UnicodeRougeTokenizer(
    use_stemmer) (`unicode` decides instead when given: rouge_multi's choice for
    all its references). Null when the reference has no token (punctuation or emoji
    only) or in another language than the answer (`same_language`), or is
    written in a script without spaces that nothing here splits
    into words (Thai: a phrase would be one token). An answer without tokens
    against a scorable reference is a real 0.
    """
    if answer is None:
        return {k: MetricResult.null("no answer") for k in ROUGE_TYPES}
    if expected is None:
        return {k: MetricResult.null("no expected answer") for k in ROUGE_TYPES}
    if not is_blank(expected):
        other = same_language(answer, [expected])[1]
        if other:
            return {k: MetricResult.null(other) for k in ROUGE_TYPES}
    if unsegmented(expected, answer):
        return {k: MetricResult.null(f"{UNSEGMENTED}; read bleu (characters)")
                for k in ROUGE_TYPES}
    if unicode is None:
        unicode = rouge_reads_unicode(answer, expected)
    target = rouge_tokens(expected, use_stemmer, unicode)
    if not target:
        reason = "expected answer has no ROUGE tokens (no letter or digit: punctuation or emoji only)"
        return {k: MetricResult.null(reason) for k in ROUGE_TYPES}
    prediction = rouge_tokens(answer, use_stemmer, unicode)
    details = {"target_tokens": len(target), "prediction_tokens": len(prediction),
               "tokenizer": "unicode" if unicode else "rouge-score"}
    return {
        "rouge1": _as_result(_score_ngrams(target, prediction, 1), **details),
        "rouge2": _as_result(_score_ngrams(target, prediction, 2), **details),
        "rougeL": _as_result(_score_lcs(target, prediction), **details),
    }


def rouge_multi(answer: str | None, expected: str | Sequence[str] | None,
                use_stemmer: bool = False) -> dict[str, MetricResult]:
    """ROUGE against one reference or several: for each variant the reference
    with the highest F1 (the first on ties), as RougeScorer.score_multi. A
    reference without ROUGE tokens scores 0 there; here it is skipped, which
    gives the same maximum, and the result is null only when every reference
    is such. One tokenizer reads all the references (as score_multi's one scorer)."""
    refs = reference_list(expected)
    if refs is None or len(refs) == 1:
        return rouge(answer, refs[0] if refs else None, use_stemmer)
    unicode = answer is not None and rouge_reads_unicode(answer, *refs)
    per_ref = [rouge(answer, ref, use_stemmer, unicode) for ref in refs]
    return {key: best_result([r[key] for r in per_ref]) for key in ROUGE_TYPES}
