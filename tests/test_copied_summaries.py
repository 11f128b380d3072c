"""bench/copied_summaries.py's length inputs and rows, by hand (FRANK's
snapshot is not on a CI machine: the script itself is not run here)."""
import math

import numpy as np

from bench.copied_summaries import as_set, length_inputs


def test_length_inputs_follow_the_shipped_ones():
    rows = [{"contexts": ["one two three", "four"], "answer": "one two"}]
    x = np.array([[0.5, 0.25, 1.0, 0.0]])
    assert length_inputs(rows, x, ()) is x
    got = length_inputs(rows, x, ("ctx", "ans", "ctx*content", "ctx*bigrams"))
    ctx, ans = math.log(5), math.log(3)  # 4 context tokens, 2 answer tokens
    assert np.allclose(got, [[0.5, 0.25, 1.0, 0.0, ctx, ans, 0.5 * ctx, 0.25 * ctx]])


def test_as_set_keeps_rows_with_a_content_word_in_order():
    rows = [{"case_id": "a", "question": "Summarize the document.",
             "contexts": ["The tower is in Paris."], "answer": "The tower is in Paris.",
             "label": "PASS", "tags": ["split:dev"]},
            {"case_id": "b", "question": "Summarize the document.",
             "contexts": ["The tower is in Paris."], "answer": "Yes.",
             "label": "FAIL", "tags": ["split:test"]},
            {"case_id": "c", "question": "Summarize the document.",
             "contexts": ["The tower is in Paris."], "answer": "The tower is in Rome.",
             "label": "FAIL", "tags": ["split:test"]}]
    s = as_set(rows)
    assert s["case_id"] == ["a", "c"] and s["y"].tolist() == [True, False]
    assert s["dev"].tolist() == [True, False] and s["x"].shape == (2, 4)
    assert s["x"][0, 0] == 1.0 and s["x"][1, 0] < 1.0  # content: Rome is not in the context
