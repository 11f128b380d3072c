"""groundedness: its signals by hand, its formula, its nulls, the shipped model
and the scorer the pipeline runs (no Beam)."""
from __future__ import annotations

import json
import math

import pytest

from schemas.records import EvalCase, Turn
from transforms.score import scoring
from transforms.score.metrics.groundedness import (MODEL_PATH, SIGNALS, Model, groundedness,
                                                   load_model, signals)

CONTEXT = ["The Eiffel Tower in Paris was finished in 1889. It is 330 metres tall."]


def test_signals_by_hand():
    x = signals("How tall is it?", CONTEXT, "The tower is 330 metres tall. Gustave built it.")
    # content stems: tower, 330, metr, tall | gustav, built -> 4 of 6 in the contexts
    assert x["content"] == pytest.approx(4 / 6)
    # bigrams of the whole answer (9 tokens, 8 pairs): (is 330) (330 metres) (metres tall)
    # are in the contexts -> 3 / 8
    assert x["bigrams"] == pytest.approx(3 / 8)
    # best one context sentence: "It is 330 metres tall." holds 3 of the first sentence's 4
    # (not "tower"); none of the second's -> (3/4 + 0) / 2
    assert x["best_sentence"] == pytest.approx(0.375)
    # facts: 330 (in the contexts); "Gustave" opens its sentence, so it is not read as a name
    assert x["unsupported"] == 0.0


def test_unsupported_counts_the_facts_the_contexts_and_question_do_not_state():
    # 1925 and "Gustave Klimt" are nowhere; Paris is in the contexts
    x = signals("When?", CONTEXT, "It was finished in 1925 by Gustave Klimt in Paris.")
    assert x["unsupported"] == pytest.approx(math.log1p(2))
    assert signals("When?", CONTEXT, "It was finished in 1889 in Paris.")["unsupported"] == 0.0
    # a figure the question states is supported; a name's words must be in a context
    assert signals("Was it 1925?", CONTEXT, "No, not 1925: 1889.")["unsupported"] == 0.0
    assert signals("Who?", CONTEXT, "It was built by Gustave Eiffel in 1889."
                   )["unsupported"] == pytest.approx(math.log1p(1))


def test_a_figure_is_read_by_value_whatever_a_language_glues_to_it():
    ctx = ["Boğaziçi Köprüsü 30 Ekim 1973'te trafiğe açıldı; uzunluğu 1.560 metredir."]
    assert signals("Ne zaman?", ctx, "Köprü 1973 yılında açıldı, 1.560 metre."
                   )["unsupported"] == 0.0
    assert signals("Ne zaman?", ctx, "Köprü 1974 yılında açıldı.")["unsupported"] > 0.0


def test_score_is_the_logistic_of_the_standardised_signals():
    model = Model(("content", "unsupported"), (0.5, 1.0), (0.25, 2.0), (2.0, -1.0), 0.5)
    x = {"content": 1.0, "unsupported": 3.0}
    z = 0.5 + 2.0 * (1.0 - 0.5) / 0.25 - 1.0 * (3.0 - 1.0) / 2.0
    assert model.score(x) == pytest.approx(1 / (1 + math.exp(-z)))


def test_supported_answers_score_above_unsupported_ones():
    good = groundedness("How tall?", CONTEXT, "The Eiffel Tower is 330 metres tall.")
    bad = groundedness("How tall?", CONTEXT, "The Eiffel Tower is 450 metres tall and made of gold.")
    off = groundedness("How tall?", CONTEXT, "Bananas grow in Ecuador.")
    assert 0 <= off.value < bad.value < good.value <= 1
    assert set(good.details) == set(SIGNALS)


def test_nulls_say_why():
    assert groundedness("q", CONTEXT, None).error == "no answer"
    for nothing in (" … ", "yes", "No.", "Yes, it is."):  # nothing a passage could state
        assert groundedness("q", CONTEXT, nothing).error.startswith(
            "the answer has no content word"), nothing
    assert groundedness("q", CONTEXT, "Yes, in Paris.").value is not None
    other = groundedness("q", CONTEXT, "Der Eiffelturm ist 330 Meter hoch und wurde 1889 "
                                        "fertiggestellt, er steht in Paris.")
    assert other.value is None and "the contexts in en" in other.error


def test_blank_contexts_are_no_contexts():
    """Contexts of blank passages only ([""], as a retriever or a CSV cell may
    give) got a groundedness of 0.224 for any answer (every signal 0), so the
    default verdict read 'groundedness 0.224 < 0.595' where hallucination, on
    the same row, said 'no contexts'. Now groundedness says 'no contexts' too,
    and blank passages beside real ones change nothing."""
    answer = "The Lumenfold warranty lasts 2 years, since March 2021."
    for blank in ([""], ["  ", "\n"]):
        assert groundedness("q", blank, answer).error == "no contexts"
        turn = Turn(EvalCase("c", "How long is the warranty?", contexts=blank), "b", answer)
        scores = scoring.score_turn(next(s for s in scoring.SCORERS if s.name == "groundedness"),
                                    {}, turn)
        assert scores["groundedness"].error == "no contexts"
    assert groundedness("q", ["", *CONTEXT], answer).value == groundedness(
        "q", CONTEXT, answer).value


def test_the_shipped_model_is_the_fit_and_says_how_it_was_made():
    with open(MODEL_PATH, encoding="utf-8") as fh:
        shipped = json.load(fh)
    assert shipped["command"] == "python bench/fit_groundedness.py"
    assert tuple(shipped["model"]["signals"]) == SIGNALS
    assert 0 < shipped["decision_cut"] < 1
    model = load_model()
    assert model.signals == SIGNALS and len(model.weights) == len(SIGNALS)
    # the fit's own leave-one-set-out record: every committed set measured held out
    assert set(shipped["leave_one_set_out"]) == set(shipped["fitted_on"])


def test_the_pipeline_scorer_computes_it():
    (scorer, opts), = scoring.select_scorers(("groundedness",), {})
    case = EvalCase(case_id="c", question="How tall?", expected_answer=None, contexts=CONTEXT,
                    answer="It is 330 metres tall.", suite="s", tags=[])
    got = scoring.score_turn(scorer, opts, Turn(case, "b", case.answer))["groundedness"]
    assert got.value == pytest.approx(groundedness("How tall?", CONTEXT,
                                                   "It is 330 metres tall.").value)
    no_ctx = EvalCase(case_id="d", question="q", expected_answer=None, contexts=None,
                      answer="a", suite="s", tags=[])
    assert scoring.score_turn(scorer, opts, Turn(no_ctx, "b", "a"))["groundedness"].error == \
        "no contexts"


def test_the_verdict_cut_offs_keep_the_wrong_decisions_within_the_goals():
    """bench/fit_groundedness.py's cut-offs by hand: PASS from the lowest cut where
    unsupported answers PASS at most `mean` on average over the sets and `worst`
    on any; FAIL below the highest cut where supported answers FAIL as rarely."""
    import numpy as np
    from bench.fit_groundedness import _fail_below, _pass_from, verdicts
    # set A: unsupported at 0.2 0.4 0.6 0.8; set B: unsupported at 0.1 0.3
    ps = [np.array([0.2, 0.4, 0.6, 0.8, 0.9]), np.array([0.1, 0.3, 0.7])]
    ys = [np.array([False, False, False, False, True]), np.array([False, False, True])]
    # from 0.805 nothing unsupported passes; from 0.605 A lets 1/4 through (mean 1/8)
    assert _pass_from(ps, ys, 0.0, 0.0) == 0.805
    assert _pass_from(ps, ys, 0.125, 0.25) == 0.605
    assert _pass_from(ps, ys, 0.1, 0.25) == 0.805  # the mean 1/8 is too much
    # supported at 0.9 (A) and 0.7 (B): below 0.7 nothing supported fails
    assert _fail_below(ps, ys, 0.0, 0.0) == 0.7
    assert _fail_below(ps, ys, 0.5, 1.0) == 0.9  # B's 0.7 fails: mean 1/2
    assert verdicts(np.array([0.05, 0.5, 0.95]), 0.1, 0.9) == ["FAIL", "WARN", "PASS"]


def test_long_answers_get_their_own_pass_cut_off_where_it_passes_more():
    """bench/fit_groundedness.py's banded PASS cut-offs by hand: short answers'
    unsupported scores reach 0.5, long answers' 0.75 (a copied summary scores
    high), supported short answers sit at 0.6. One cut-off must be 0.755 and
    holds the short supported ones at WARN; two PASS them, so the fit splits at
    the first edge (80 characters) and the verdict applies the higher cut-off
    only above it."""
    import numpy as np
    from bench.fit_groundedness import _pass_cuts, _pass_from, pass_cuts, verdicts
    unsupported_short, unsupported_long = np.linspace(0.1, 0.5, 10), np.linspace(0.1, 0.75, 10)
    p = np.r_[unsupported_short, np.full(10, 0.6), unsupported_long, np.full(10, 0.9)]
    y = np.r_[np.zeros(10), np.ones(10), np.zeros(10), np.ones(10)].astype(bool)
    chars = np.r_[np.full(20, 50.0), np.full(20, 300.0)]
    assert _pass_from([p], [y], 0.0, 0.0) == 0.755
    cuts = _pass_cuts([p], [y], [chars], 0.0, 0.0)
    assert cuts == {"pass_from": 0.505, "long_answers": {"above_chars": 80, "pass_from": 0.755}}
    assert list(pass_cuts(np.array([80.0, 81.0]), cuts)) == [0.505, 0.755]
    assert verdicts(np.array([0.6, 0.6]), 0.1, pass_cuts(np.array([50.0, 300.0]), cuts)) == [
        "PASS", "WARN"]
    # where long answers need no more than short ones, one cut-off stays
    same = _pass_cuts([p[:20]], [y[:20]], [chars[:20]], 0.0, 0.0)
    assert same == {"pass_from": 0.505, "long_answers": None}


def test_a_rows_facts_are_checked_once_for_hallucination_and_groundedness():
    from transforms.score.facts.support import checked_facts
    from transforms.score.metrics.hallucination import hallucination
    answer = "It was finished in 1925 by Gustave Klimt."
    checked_facts.cache_clear()
    hallucination(answer, CONTEXT, "When?")
    groundedness("When?", CONTEXT, answer)
    info = checked_facts.cache_info()
    assert (info.misses, info.hits) == (1, 1)
