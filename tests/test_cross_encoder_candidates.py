"""The pure helpers of bench/cross_encoder_candidates.py (the script itself needs
torch, which the product and its tests never import)."""
import numpy as np

from bench.cross_encoder_candidates import (best_windows, pack_windows, row_weights,
                                            sample_rows)


def test_windows_are_whole_sentences_within_the_limit():
    sents, lens = ["a b.", "c.", "d e f.", "g h i j k l."], [2, 1, 3, 6]
    assert pack_windows(sents, lens, limit=3) == ["a b. c.", "d e f.", "g h i j k l."]
    assert pack_windows(sents, lens, limit=100) == ["a b. c. d e f. g h i j k l."]


def test_the_windows_sharing_most_of_the_answer_come_first():
    windows = ["The cat sat.", "Paris is the capital of France.", "France borders Spain."]
    assert best_windows(windows, "Paris is in France", keep=2) == windows[1:]
    assert best_windows(windows, "nothing shared here", keep=1) == windows[:1]  # ties: earlier
    assert best_windows([], "an answer") == [""]


def test_the_sample_keeps_at_most_n_dev_and_n_test_rows_in_order():
    dev = np.array([True] * 10 + [False] * 4)
    rows = sample_rows(dev, 3, 5)
    assert list(rows) == sorted(rows) and dev[rows].sum() == 3 and (~dev[rows]).sum() == 4
    assert list(rows) == list(sample_rows(dev, 3, 5))  # seeded


def test_each_set_and_within_it_each_label_weighs_alike():
    y = np.array([1, 0, 0, 0, 1, 1, 0], bool)
    group = np.array(["a", "a", "a", "a", "b", "b", "b"])
    w = row_weights(y, group)
    cells = [w[(group == g) & (y == c)].sum() for g in "ab" for c in (False, True)]
    assert np.allclose(cells, cells[0]) and np.isclose(w.sum(), len(y))
