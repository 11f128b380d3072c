"""The bundled example data (examples/support): present, well-formed, reproducible."""
from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "support"
GENERATOR = EXAMPLE / "make_example.py"
GENERATED = ["knowledge.md", "faq.parquet", "faq.csv", "cases.parquet", "README.md"]
REQUIRED_KINDS = ["exact", "paraphrase", "missing_facts", "wrong_number", "wrong_date",
                  "invented_claim", "off_topic", "empty", "very_long", "non_ascii"]
OPTIONAL_KINDS = ["hedged", "polite"]


def _normal(text: str) -> str:
    """The exact-match normal form: lower-cased, trimmed, whitespace collapsed."""
    return re.sub(r"\s+", " ", text).strip().lower()


@pytest.fixture(scope="module")
def knowledge() -> str:
    return (EXAMPLE / "knowledge.md").read_text("utf-8")


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    return pq.read_table(EXAMPLE / "cases.parquet").to_pylist()


def test_files_exist():
    for name in GENERATED + ["make_example.py"]:
        assert (EXAMPLE / name).is_file(), name


def test_knowledge_has_facts_to_check(knowledge):
    words = len(knowledge.split())
    assert 1500 <= words <= 3000, words
    assert re.search(r"\$\d[\d,]*\.\d\d per month", knowledge)
    assert "$10,000" in knowledge
    assert re.search(r"\d+%", knowledge)
    assert re.search(r"(January|March|June|October|December) \d{1,2}, 20\d\d", knowledge)
    assert re.search(r"\b20\d\d-\d\d-\d\d\b", knowledge)


def test_faq_parquet_and_csv_agree():
    faq = pq.read_table(EXAMPLE / "faq.parquet")
    assert faq.schema.names == ["question", "answer"]
    assert faq.schema.field("question").type == pa.string()
    assert 40 <= faq.num_rows <= 60
    rows = faq.to_pylist()
    assert all(r["question"].strip() and r["answer"].strip() for r in rows)
    assert len({r["question"] for r in rows}) == len(rows)
    csv = pacsv.read_csv(EXAMPLE / "faq.csv")
    assert csv.schema.names == ["question", "answer"]
    assert csv.to_pylist() == rows


def test_cases_schema(cases):
    schema = pq.read_schema(EXAMPLE / "cases.parquet")
    for name in ["case_id", "question", "expected_answer", "answer", "suite", "quality"]:
        assert schema.field(name).type == pa.string(), name
    for name in ["contexts", "tags"]:
        assert schema.field(name).type == pa.list_(pa.string()), name
    assert len(cases) >= 200


def test_case_ids_unique_and_questions_present(cases):
    ids = [c["case_id"] for c in cases]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"sup-\d{4}", i) for i in ids)
    assert all(c["question"] and c["question"].strip() for c in cases)
    assert all(c["answer"] is not None and c["suite"] for c in cases)


def test_quality_kinds(cases):
    counts = Counter(c["quality"] for c in cases)
    for kind in REQUIRED_KINDS:
        assert counts[kind] >= 15, (kind, counts[kind])
    for kind in OPTIONAL_KINDS:
        assert counts[kind] >= 1, kind
    assert set(counts) <= set(REQUIRED_KINDS + OPTIONAL_KINDS)
    for c in cases:
        quality_tags = [t for t in c["tags"] if t.startswith("quality:")]
        assert quality_tags == [f"quality:{c['quality']}"], c["case_id"]


def test_nulls_present(cases):
    assert sum(c["expected_answer"] is None for c in cases) >= 3
    assert sum(c["contexts"] is None for c in cases) >= 3


def test_contexts_are_verbatim_passages(cases, knowledge):
    for c in cases:
        if c["contexts"] is None:
            continue
        assert 1 <= len(c["contexts"]) <= 4, c["case_id"]
        for passage in c["contexts"]:
            assert passage and passage in knowledge, (c["case_id"], passage[:60])


def test_answers_match_their_quality(cases):
    for c in cases:
        kind, answer, expected = c["quality"], c["answer"], c["expected_answer"]
        if kind == "exact":
            assert expected is not None and _normal(answer) == _normal(expected), c["case_id"]
        elif kind == "empty":
            assert answer == "", c["case_id"]
        elif kind == "very_long":
            assert len(answer) >= 3000, c["case_id"]
        elif kind == "non_ascii":
            assert any(ord(ch) > 127 for ch in c["question"] + answer), c["case_id"]
        else:
            assert answer.strip(), c["case_id"]
        if kind in {"paraphrase", "wrong_number", "wrong_date", "missing_facts"} and expected:
            assert _normal(answer) != _normal(expected), c["case_id"]


def test_generator_is_deterministic(tmp_path):
    result = subprocess.run([sys.executable, str(GENERATOR), str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    for name in GENERATED:
        assert (tmp_path / name).read_bytes() == (EXAMPLE / name).read_bytes(), name
