"""bench/span_signal_candidates.py's runs, by hand."""
import math

from bench.span_signal_candidates import context_runs, cut_into_runs, span_signals


def test_runs_are_cut_greedily_from_the_left_and_never_span_two_contexts():
    runs = context_runs(["the tower is in paris", "it opened in 1889"])
    assert ("tower", "is", "in", "paris") in runs and ("paris", "it") not in runs
    # "the tower opened in 1889": "the tower" (2), then "opened in 1889" (3)
    assert cut_into_runs(["the", "tower", "opened", "in", "1889"], runs) == [2, 3]
    # a token found nowhere is a run of 0, passed over on its own
    assert cut_into_runs(["the", "tower", "fell", "in", "paris"], runs) == [2, 0, 2]
    assert cut_into_runs(["paris"], runs) == [1]


def test_span_signals_of_a_stitched_and_of_a_copied_answer():
    contexts = ["The tower is in Paris.", "It opened in 1889."]
    copied = span_signals("The tower is in Paris.", contexts)
    # one sentence, 5 tokens, one run of 5: runs/token 0.2, copied runs/token 0.2,
    # longest share 1, log(1 + 5)
    assert [round(v, 6) for v in copied] == [0.2, 0.2, 0.2, 1.0, round(math.log(6), 6), 0.2]
    stitched = span_signals("The tower opened in 1889. The tower fell in Paris.", contexts)
    # sentence 1: runs [2, 3] over 5 tokens; sentence 2: runs [2, 0, 2] over 5 tokens
    assert [round(v, 6) for v in stitched] == [
        round((2 / 5 + 3 / 5) / 2, 6), 0.6, round((2 / 5 + 2 / 5) / 2, 6), 0.4,
        round((math.log(1 + 2.5) + math.log(1 + 4 / 3)) / 2, 6), 0.4]
    assert span_signals("Yes.", contexts) == [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
