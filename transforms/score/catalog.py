"""What every built-in metric computes, said for people: its formula, where its
value lives, and why it can be null beyond a missing input or a failed bot.

The scorer registry (scoring.py) holds what the code needs (inputs, direction,
options); this holds what a reader needs, and the docs' metrics reference is
made from both (pipeline/reference.py). A test fails when a metric has no
entry here, or an entry names a null reason the code never gives.
"""
from __future__ import annotations

from dataclasses import dataclass

from transforms.enrich.judge.keys import NO_ROLE, RUBRICS, SAFETY_CATEGORIES, SAFETY_METRICS


@dataclass(frozen=True)
class MetricDoc:
    formula: str
    nulls: tuple[str, ...] = ()  # reasons as scores.error words them; … stands for a value
    unit: str = "[0, 1]"


_EMPTY_REF = "empty expected answer"
_UNSEGMENTED = "a text is written in Thai, Lao, Myanmar or Khmer (…)"
_OTHER_LANGUAGE = "the answer is in …, the expected answer in …: n-gram overlap says nothing across languages"
_JUDGE_RUBRIC = ("rubric score s on the scale [low, high] (default [1, 5], "
                 "`metric_options.{m}.scale` for an overridden template) from the judge's "
                 "`{{\"score\", \"reason\"}}` reply, value (s − low) / (high − low); raw score, "
                 "scale and reason in details")

_CUT = ("; a text the embedder read the start of only (the local model: over 256 "
        "tokens) is named in details `truncated` (`answer: 812 tokens, read 254`")
_TRUNCATED = _CUT + ")"
# The sentence-vector metrics: the multilingual model cuts at 20,000 characters instead.
_TRUNCATED_SENTENCE = (_CUT + "; `embeddings.model: multilingual`: over 20,000 characters, "
                       "`answer: 24312 characters, read 20000`)")

METRIC_DOCS: dict[str, MetricDoc] = {
    "exact_match": MetricDoc(
        "1 if N(answer) = N(expected) else 0, N case-folds, trims and collapses whitespace "
        "and folds Unicode compatibility forms (NFKC: a combining accent and its precomposed "
        "letter are one, full-width `ＡＢＣ１２３` is `ABC123`, half-width katakana full-width; "
        "Arabic-Indic digits read as ASCII); with several references 1 when the answer "
        "equals any", (_EMPTY_REF,)),
    "keyword_recall": MetricDoc(
        "|E ∩ G| / |E|, E and G the token sets of the expected answer and the answer; the "
        "best over several references", ("expected answer has no tokens", _UNSEGMENTED)),
    "answer_length": MetricDoc(
        "the answer's length in characters as a reader counts them (Unicode extended "
        "grapheme clusters: a family emoji, a flag, a Devanagari conjunct or a letter with a "
        "combining accent is one); tokens and code points in details", unit="characters"),
    "politeness": MetricDoc(
        "min(1, markers found / 2); markers configurable (default \"please\", \"sorry\", "
        "\"happy to help\", \"can help\"), whole-word, case-insensitive"),
    "latency_ms": MetricDoc("the bot call's time on the wire in ms (monotonic clock)",
                            ("no latency measured (recorded answer)",), unit="milliseconds"),
    "bleu": MetricDoc(
        "`sacrebleu.sentence_bleu(answer, [references], tokenize=T).score / 100` with "
        "sacrebleu's defaults (exp smoothing, effective order); T is 13a (the default) unless "
        "a text writes Han (`zh`), kana, Thai, Lao, Khmer or Myanmar (`char`), or Arabic or "
        "an Indic script (`intl`); references in another language than the answer are left "
        "out; n-gram precisions, BP and the signature (with T) in details",
        (_EMPTY_REF, _OTHER_LANGUAGE)),
    "rouge1": MetricDoc(
        "F1 of `rouge_score.RougeScorer` on unigrams (target = expected, prediction = answer; "
        "several references: rouge-score's `score_multi`); its default tokenizer for ASCII "
        "text, `tokenizer=UnicodeRougeTokenizer()` (evalbeam's words in any script, each Han "
        "or kana character a token) when a text has a letter or digit that is not ASCII "
        "(`tokenizer` in details); a reference in another language than the answer is left out; "
        "precision and recall in details; stemming off by default",
        ("expected answer has no ROUGE tokens", _UNSEGMENTED, _OTHER_LANGUAGE)),
    "rouge2": MetricDoc("F1 of rouge-score's ROUGE-2 (bigrams), otherwise as rouge1",
                        ("expected answer has no ROUGE tokens (…)", _UNSEGMENTED,
                         _OTHER_LANGUAGE)),
    "rougeL": MetricDoc("F1 of rouge-score's ROUGE-L (the longest common subsequence), "
                        "otherwise as rouge1", ("expected answer has no ROUGE tokens (…)",
                                                _UNSEGMENTED, _OTHER_LANGUAGE)),
    "lexical_relevance": MetricDoc(
        "(cos_tfidf(Q, R) + Jaccard(Q, R)) / 2 over stems; TF = raw counts, idf(t) = "
        "ln((1+N)/(1+df(t))) + 1 over the run's own corpus, vectors L2-normalised; Jaccard = "
        "|Q ∩ R| / |Q ∪ R|", ("question has no tokens", _UNSEGMENTED)),
    "completeness": MetricDoc(
        "share of the question's keywords whose stem occurs in the answer",
        ("question has no keywords", _UNSEGMENTED)),
    "hallucination": MetricDoc(
        "1 − overlap × (1 − S_facts): overlap = share of the answer's distinct content "
        "unigrams and bigrams (stems, stop words left out) found in the contexts; S_facts = "
        "share of its figures, dates, times and names that no context (or, for a figure, the "
        "question) states, 0 when it states none; in another language than the contexts, or "
        "in Thai, Lao, Myanmar or Khmer, S_facts alone (see Metrics, Hallucination). The "
        "option `window` is accepted and has no effect (it bounded the claim checks, removed "
        "in issue 21)",
        ("empty answer", "the answer is in …, the contexts in …", _UNSEGMENTED)),
    "unsupported_facts": MetricDoc(
        "the number of the answer's figures, dates and names that no context, the question "
        "or an expected answer states; from the same pass as `hallucination`, the facts in "
        "details", ("empty answer", "the answer is in …, the contexts in …", _UNSEGMENTED),
        unit="count"),
    "reference_coverage": MetricDoc(
        "(content words of the reference found in the answer + 2 × its figures and dates "
        "found by value) / (content words + 2 × figures and dates); recall, so a long answer "
        "is not penalised; stems and stop words of the reference's language; an answer in "
        "another language is compared by figures and dates only",
        ("reference has no content words", "…: no figures or dates to compare",
         "…: the answer states no figure or date to compare")),
    "key_fact_recall": MetricDoc(
        "reference_coverage without a reference: the context sentences that share most of "
        "the question's content words (top 3) stand in for it; the answer's coverage of the "
        "best-covered sentence's words that are not in the question",
        ("question has no content words", "no context sentence matches the question",
         _UNSEGMENTED)),
    "groundedness": MetricDoc(
        "1 / (1 + exp(−(b + Σ w_i (x_i − μ_i) / σ_i))), a logistic regression over signals of "
        "the answer against its contexts: content: share of the answer's content words (stems) "
        "in the contexts; bigrams: share of its word bigrams in them; best_sentence: mean over "
        "its sentences of the largest share of their content words one context sentence "
        "holds; unsupported: log(1 + its figures, amounts, dates, times and names that "
        "neither the contexts nor the question state, as hallucination checks them). "
        "Higher = better supported. Weights, μ, σ in transforms/data/groundedness.json, "
        "fitted on the public benchmark's dev splits by `python bench/fit_groundedness.py`, "
        "which reports it leave-one-set-out; the signals in details",
        ("the answer has no content word to look for in the contexts (only stop words, or a "
         "bare yes or no)",
         "the answer is in …, the contexts in …: word overlap says nothing across languages",
         _UNSEGMENTED)),
    "answer_similarity": MetricDoc(
        "max(0, cos(E(expected), E(answer))) with E the sentence embedder; the best over "
        "several references (a blank one passed over); raw cosine in details; an empty "
        "answer scores 0" + _TRUNCATED_SENTENCE, (_EMPTY_REF,)),
    "bertscore": MetricDoc(
        "greedy matching of token vectors as bert_score does: R = Σ_r w_r · max_c cos(r, c) / "
        "Σ w_r over reference tokens, P the converse over answer tokens, value F1 = 2PR/(P+R), "
        "P and R in details; w = 1, or idf over the run's references with "
        "`metric_options.bertscore.idf: true`" + _TRUNCATED, ("reference has no tokens",)),
    "answer_relevance": MetricDoc(
        "mean of max(0, cos(E(sentence), E(question))) over the better half of the answer's "
        "sentences (first 64), × novelty / 0.3 when novelty (the share of the answer's "
        "content words not in the question) is below 0.3: restating the question is not "
        "answering it" + _TRUNCATED_SENTENCE),
    "faithfulness": MetricDoc(
        "supported claims / claims of the answer, each claim verified against the contexts",
        ("the answer makes no claim",)),
    "answer_correctness": MetricDoc(
        "(w_f · F1 + w_s · answer_similarity) / (w_f + w_s), weights 0.75 and 0.25 by "
        "default; F1 = TP / (TP + ½(FP + FN)) with TP = answer claims the reference supports, "
        "FP = answer claims it does not, FN = reference claims the answer misses",
        ("neither the answer nor the reference makes a claim", "answer similarity: …")),
    "context_recall": MetricDoc(
        "reference claims attributable to the contexts / claims of the reference",
        ("the reference makes no claim",)),
    "context_precision": MetricDoc(
        "average precision over the contexts in retrieval order: Σ_k precision@k · v_k / "
        "Σ v_k, v_k = 1 when context k was useful to reach the reference (0 when none was)"),
    "context_entities_recall": MetricDoc(
        "entities of the reference found in the contexts / entities of the reference; "
        "entities listed by the judge, or by rules without a judge (`method` in details); "
        "found = the entity's words appear adjacent, in order, in a context",
        ("the reference names no entity",)),
    "noise_sensitivity": MetricDoc(
        "incorrect claims of the answer (not supported by the reference) / all its claims; "
        "details count the incorrect claims the contexts supported "
        "(`incorrect_from_contexts`: errors the retrieved noise led to)",
        ("the answer makes no claim", "the reference makes no claim")),
    "knowledge_retention": MetricDoc(
        "assistant turns (earlier ones and the bot's answer) that keep what the user said "
        "earlier / assistant turns; per-turn verdicts, `final_turn` and the failures in "
        "details"),
    "conversation_relevancy": MetricDoc(
        "assistant turns relevant to the user message they answer, in context / assistant "
        "turns"),
    "role_adherence": MetricDoc(
        "assistant turns that stay in the role / assistant turns; the role is "
        "`metric_options.role_adherence.role`, else the conversation's system turn",
        (NO_ROLE,)),
    "conversation_completeness": MetricDoc(
        "user intentions across the conversation that the assistant satisfied / intentions "
        "(the judge lists them)", ("the judge found no user intention",)),
    "grounding_classifier": MetricDoc(
        "SummaC-style: min over the answer's sentences of (max over the contexts' chunks of "
        "P(supported | chunk, sentence)), from a sequence-classification model behind an "
        "HTTP endpoint (TEI's /predict, vLLM's /score); every sentence's support, best "
        "chunk and P(contradicted) in details",
        ("the answer has no sentence to check", "the contexts have no text to check against",
         "… of … pairs not classified: …")),
    **{m: MetricDoc(_JUDGE_RUBRIC.format(m=m)) for m in RUBRICS},
    **{m: MetricDoc(
        f"1.0 when the majority of the sampled votes (`judge.safety.votes`, 3) flags the "
        f"answer as {c.replace('_', ' ')}, 0.0 when the majority clears it; the votes and "
        "the reasons in details", ("no majority of … votes …",))
       for c, m in zip(SAFETY_CATEGORIES, SAFETY_METRICS)},
}
