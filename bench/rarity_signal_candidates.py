"""Is a rare word the contexts lack stronger evidence than a common one? Measured.

    nice -n 5 python bench/rarity_signal_candidates.py --wordfreq-site DIR   # a few minutes

`groundedness`'s `content` counts every content word of the answer alike, and
the raw count of the ones the contexts lack did not help (groundedness.py's
docstring). But a missing rare word (a specific name, a number word, a technical
term) is more likely invented than a missing common one ("really", "great",
"think"). Each content word of the answer (a token that is neither a stop word
nor a polar word, looked up by its stem in the contexts exactly as `content`
does) gets a rarity weight, from one of three sources:

- wordpiece: the number of pieces the word splits into under the MiniLM
  tokenizer the product ships (tokenizer.json alone, no weights: a word of its
  ~30k-piece vocabulary is one piece, a rarer word several; of a word with
  punctuation inside, its part with the most pieces);
- wordfreq: 9 - its Zipf frequency in English (the `wordfreq` package's list:
  an information content, 9 for a word it does not know); measuring only,
  installed apart (`pip install --target DIR wordfreq`, then --wordfreq-site DIR):
  56 MB, never a dependency of the product;
- idf: -ln of the mean over the fitted sets of the share of their distinct dev
  contexts holding the stem (each set alike; +0.5 / +1 smoothing), recomputed
  inside each leave-one-set-out fold from the sets fitted on, never from the
  held-out set (the fold's inner margin fits reuse the fold's weights).

And three signals from them:

- (a) rarity-weighted unsupported share: the weights of the answer's content
  words the contexts lack over the weights of all its content words;
- (b) the same in the answer's least supported sentence (its highest share);
- (c) rarity-weighted content share, 1 - (a): as a fifth input the same model as
  (a), so measured only in place of `content`.

Arms: the shipped four inputs; per source + (a), + (b), + (a) and (b), and (c)
in place of `content`; and one control, (b) with every weight 1 (the least
supported sentence without the weighting). Each arm is fitted and held out
leave-one-set-out exactly as bench/fit_groundedness.py does for the shipped
model (its load_sets, Fits, leave_one_out / held_out and verdict_cuts): AUC and
balanced accuracy at the fitted cut on the held-out set's test rows, and the
decided share and errors of the verdict's two fitted cut-offs; means over the
six sets of issue 21's goals. Writes validation/results/rarity_candidates.md
and .json (VALIDITY.md includes the page).

Decision rule, written before the held-out figures were looked at: ship the
best arm (highest mean AUC) only if it raises the mean held-out AUC by >= +0.005
over the shipped inputs, its mean BA does not drop, its verdict's mean decided
share does not drop by more than 0.01, and it needs no runtime dependency beyond
setup.py's (so not wordfreq: a wordfreq arm that passes would only say that a
small committed table might). Thirteen arms are compared, so the best one's
gain is partly selection: one just at +0.005 is weak evidence.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import sys
from collections import Counter

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from bench.embedding_signal_candidates import line, table_head  # noqa: E402
from bench.fit_groundedness import (Fits, held_out, leave_one_out, load_sets,  # noqa: E402
                                    verdict_cuts)
from bench.validity_changes import CORE  # noqa: E402  (issue 21's six sets)
from bench.validity_report import write_page  # noqa: E402
from pipeline.postrun.agreement import roc_auc  # noqa: E402
from transforms.enrich.embeddings.local_minilm import resolve_model_dir  # noqa: E402
from transforms.score.facts.sentences import split_sentences  # noqa: E402
from transforms.score.metrics.groundedness import _sources  # noqa: E402
from transforms.text.terms import content_stems  # noqa: E402
from transforms.text.tokens import tokenize  # noqa: E402

OUT = os.path.join(ROOT, "validation", "results", "rarity_candidates.md")
COMMAND = "nice -n 5 python bench/rarity_signal_candidates.py --wordfreq-site <dir>"
SHIPPED = "as shipped (4 inputs)"
GAIN, DECIDED_DROP = 0.005, 0.01  # the decision rule (see the docstring)


def answer_words(row: dict) -> list[list[tuple[str, str, bool]]]:
    """The answer's sentences, each as its content words (word, stem, found in the
    contexts), looked up as groundedness's `content` looks them up."""
    src = _sources(tuple(row["contexts"]))
    out = []
    for sentence in split_sentences(row["answer"]):
        words = [t for t in tokenize(sentence)
                 if content_stems([t], src.lang)]  # a stop or polar word yields nothing
        if words:
            stems = content_stems(words, src.lang)
            out.append([(w, s, s in src.stems) for w, s in zip(words, stems)])
    if not out:  # the splitter lost the words: the whole answer as one sentence
        words = [t for t in tokenize(row["answer"]) if content_stems([t], src.lang)]
        out = [[(w, s, s in src.stems) for w, s in zip(words, content_stems(words, src.lang))]]
    return out


def load(cache: str) -> dict[str, dict]:
    """load_sets' sets with each row's `words` (answer_words) and each set's
    document frequencies of stems over its distinct dev contexts (`df`, `docs`);
    cached in `cache` (the signals take minutes)."""
    if cache and os.path.exists(cache):
        with open(cache, "rb") as fh:
            return pickle.load(fh)
    sets = load_sets(keep_rows=True)
    for s in sets.values():
        rows = s.pop("rows")
        s["words"] = [answer_words(r) for r in rows]
        contexts = {tuple(r["contexts"]) for r, d in zip(rows, s["dev"]) if d}
        s["df"] = Counter(st for c in contexts for st in _sources(c).stems)
        s["docs"] = len(contexts)
    if cache:
        with open(cache, "wb") as fh:
            pickle.dump(sets, fh)
    return sets


def weighted_shares(words: list[list[tuple[str, str, bool]]], weight) -> tuple[float, float]:
    """(a) and (b) of one answer: the weighted unsupported share of all its
    content words, and the highest such share of one of its sentences."""
    def share(ws):
        total = sum(weight(w, s) for w, s, _ in ws)
        return sum(weight(w, s) for w, s, found in ws if not found) / total if total else 0.0
    flat = [x for sentence in words for x in sentence]
    return share(flat), max((share(ws) for ws in words if ws), default=0.0)


def wordpiece_weight():
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(resolve_model_dir() / "tokenizer.json"))  # no weights read
    tok.no_padding()  # its file pads every text to 128 pieces
    cache: dict[str, int] = {}

    def pieces(word: str, _stem: str) -> float:
        """The most pieces of one of the word's parts between punctuation ("arthur's":
        arthur, ', s: 1), as the tokenizer splits a word at punctuation first."""
        if word not in cache:
            parts = tok.encode(word, add_special_tokens=False).tokens
            runs, n = [], 0
            for p in parts:
                if not p.startswith("##"):
                    runs.append(n)
                    n = 0
                n += p.isalnum() or p.startswith("##")
            cache[word] = max([*runs, n, 1])
        return float(cache[word])
    return pieces


def wordfreq_weight(site: str):
    sys.path.append(site)
    from wordfreq import zipf_frequency

    def information(word: str, _stem: str) -> float:
        return 9.0 - zipf_frequency(word, "en")
    return information


def idf_weight(sets: dict[str, dict], names: list[str]):
    """-ln of the mean share of each set's distinct dev contexts holding the stem."""
    cache: dict[str, float] = {}

    def idf(_word: str, stem: str) -> float:
        if stem not in cache:
            cache[stem] = -math.log(sum((sets[n]["df"][stem] + 0.5) / (sets[n]["docs"] + 1)
                                        for n in names) / len(names))
        return cache[stem]
    return idf


def columns(sets: dict[str, dict], weight) -> dict[str, np.ndarray]:
    """{set: rows x [(a), (b)]} under `weight`."""
    return {n: np.array([weighted_shares(w, weight) for w in s["words"]])
            for n, s in sets.items()}


def variant(sets: dict[str, dict], cols: dict[str, np.ndarray], arm: str) -> dict[str, dict]:
    """The sets with the arm's inputs: '+a', '+b', '+ab' add columns, 'c' puts
    1 - (a) in place of `content` (the first input)."""
    def x(n):
        base, c = sets[n]["x"], cols[n]
        if arm == "c":
            return np.c_[1.0 - c[:, 0], base[:, 1:]]
        return np.c_[base, c[:, {"+a": [0], "+b": [1], "+ab": [0, 1]}[arm]]]
    return {n: {**s, "x": x(n)} for n, s in sets.items()}


def per_fold(sets: dict[str, dict], arm: str) -> dict[str, dict]:
    """leave_one_out with IDF weights from the fitted sets' dev contexts only."""
    out = {}
    for name in sets:
        rest = [n for n in sets if n != name]
        v = variant(sets, columns(sets, idf_weight(sets, rest)), arm)
        fits = Fits(v)
        out[name] = held_out(v, name, *fits(rest), verdict_cuts(v, rest, fits))
    return out


ARMS = (("+a", "+ (a) weighted unsupported share"),
        ("+b", "+ (b) the same, least supported sentence"),
        ("+ab", "+ (a) and (b)"),
        ("c", "(c) weighted content share in place of content"))


def alike(sets: dict[str, dict], cols: dict[str, np.ndarray]) -> dict[str, float]:
    """How far (a) is from the unweighted unsupported share, 1 - content: their
    correlation over each goal set's rows, and each one's AUC alone on the test
    rows (means over the six sets)."""
    corr, auc_a, auc_content = [], [], []
    for n in CORE:
        s, a = sets[n], cols[n][:, 0]
        test = ~s["dev"]
        y = list(s["y"][test])
        corr.append(np.corrcoef(a, 1.0 - s["x"][:, 0])[0, 1])
        auc_a.append(roc_auc(list(-a[test]), y))
        auc_content.append(roc_auc(list(s["x"][test, 0]), y))
    return {"corr": float(np.mean(corr)), "min_corr": float(np.min(corr)),
            "auc_a": float(np.mean(auc_a)), "auc_content": float(np.mean(auc_content))}


def with_facts(sets: dict[str, dict], rare) -> tuple[float, float]:
    """Over the goal sets' rows whose answer lacks a content word: the share with an
    unsupported fact (the `unsupported` input above 0) among those lacking a `rare`
    word, and among those lacking only other words."""
    hits = {True: [], False: []}
    for n in CORE:
        for words, x in zip(sets[n]["words"], sets[n]["x"]):
            missing = [(w, st) for sentence in words for w, st, found in sentence if not found]
            if missing:
                hits[any(rare(w, st) for w, st in missing)].append(x[3] > 0)
    return float(np.mean(hits[True])), float(np.mean(hits[False]))


RARE = {"wordpiece": ("two pieces or more", lambda weight: weight >= 2),
        "wordfreq": ("Zipf frequency below 3", lambda weight: weight > 6)}


def measure(sets: dict[str, dict], site: str | None, diag: dict) -> dict[str, dict]:
    arms = {SHIPPED: leave_one_out(sets, Fits(sets))}
    control = variant(sets, columns(sets, lambda w, s: 1.0), "+b")
    arms["control: + (b) with every weight 1"] = leave_one_out(control, Fits(control))
    sources = [("wordpiece", wordpiece_weight())]
    if site:
        sources.append(("wordfreq", wordfreq_weight(site)))
    for source, weight in sources:
        cols = columns(sets, weight)
        diag[source] = alike(sets, cols)
        diag[source]["with_facts"] = with_facts(sets, lambda w, st: RARE[source][1](weight(w, st)))
        for arm, label in ARMS:
            v = variant(sets, cols, arm)
            arms[f"{source}: {label}"] = leave_one_out(v, Fits(v))
            print(line(f"{source}: {label}", arms[f"{source}: {label}"]), flush=True)
    for arm, label in ARMS:
        arms[f"idf: {label}"] = per_fold(sets, arm)
        print(line(f"idf: {label}", arms[f"idf: {label}"]), flush=True)
    return arms


def summary(per_set: dict[str, dict]) -> dict[str, float]:
    g = [per_set[n] for n in CORE]
    return {"auc": float(np.mean([r["auc"] for r in g])),
            "balanced_accuracy": float(np.mean([r["balanced_accuracy"] for r in g])),
            "decided": float(np.mean([r["verdict"]["decided"] for r in g])),
            "begin_over_bigram": per_set["begin"]["auc"] - per_set["begin"]["bigram_auc"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wordfreq-site", help="a directory wordfreq was pip-installed into "
                    "(--target); without it the wordfreq arms are left out")
    ap.add_argument("--cache", help="pickle of the loaded sets and words (made if missing)")
    args = ap.parse_args(argv)
    sets = load(args.cache)
    diag: dict[str, dict] = {}
    arms = measure(sets, args.wordfreq_site, diag)
    sums = {k: summary(v) for k, v in arms.items()}
    base = sums[SHIPPED]
    best = max((k for k in arms if k != SHIPPED and not k.startswith("control")),
               key=lambda k: sums[k]["auc"])
    b = sums[best]
    passes = (b["auc"] - base["auc"] >= GAIN and b["balanced_accuracy"] >= base["balanced_accuracy"]
              and b["decided"] >= base["decided"] - DECIDED_DROP)
    allowed = not best.startswith("wordfreq")
    with open(OUT[:-len(".md")] + ".json", "w", encoding="utf-8") as fh:
        json.dump({"command": COMMAND, "summary": sums, "alike": diag, "arms": arms}, fh,
                  indent=1,
                  sort_keys=True)
        fh.write("\n")
    rows = sum(len(s["x"]) for s in sets.values())
    lines = [f"`{COMMAND}`: the rarity of the answer's content words the contexts lack as an "
             "input of groundedness's model, from three sources (MiniLM word pieces, "
             "`wordfreq`'s English Zipf frequency, IDF over the fitted sets' dev contexts), "
             f"on all {rows} rows; each arm fitted and held out leave-one-set-out exactly "
             "like the shipped model (mean of the six sets of issue 21's goals; per set "
             "AUC; the verdict columns are groundedness's two fitted cut-offs alone, worst "
             "set in brackets; the script's docstring says how and gives the decision rule):",
             "", *table_head(CORE), *(line(label, per_set) for label, per_set in arms.items()),
             "| *bigram baseline* | | | " + " | ".join(
                 f"{arms[SHIPPED][n]['bigram_auc']:.3f}" for n in CORE) + " | | | |", "",
             f"Finding: the best arm ({best}) moves the mean held-out AUC by "
             f"{b['auc'] - base['auc']:+.4f}, BA by "
             f"{b['balanced_accuracy'] - base['balanced_accuracy']:+.4f} and the decided share "
             f"by {b['decided'] - base['decided']:+.3f}; on begin groundedness would lead the "
             f"bigram baseline by {b['begin_over_bigram']:+.3f} (as shipped "
             f"{base['begin_over_bigram']:+.3f}; the goal +0.03). "
             + ("It meets the decision rule." if passes and allowed else
                "It does not meet the decision rule (AUC +0.005, BA and decided share kept, "
                "no new runtime dependency), so nothing is shipped. ")
             + "Weighting barely moves the share: over each set's rows (a) correlates with "
             "the unweighted unsupported share (1 - content) at "
             + ", ".join(f"{d['corr']:.3f} (lowest set {d['min_corr']:.3f}) with {k}"
                         for k, d in diag.items())
             + "; alone it ranks the test rows at mean AUC "
             + ", ".join(f"{d['auc_a']:.4f} ({k})" for k, d in diag.items())
             + f" where content does at {next(iter(diag.values()))['auc_content']:.4f}. "
             "And the `unsupported` input (the facts layer's count of names and figures) "
             "already reads much of it: of the answers lacking a content word, those lacking "
             "a rare one have an unsupported fact in "
             + ", ".join(f"{d['with_facts'][0]:.0%} ({RARE[k][0]}, {k})"
                         for k, d in diag.items())
             + " of rows, the others in "
             + ", ".join(f"{d['with_facts'][1]:.0%}" for d in diag.values()) + "."]
    return write_page(OUT, lines)


if __name__ == "__main__":
    sys.exit(main())
