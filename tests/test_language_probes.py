"""Answers in languages the validation sets do not cover (Russian, Japanese,
Korean, Portuguese, Italian, Turkish, Finnish, Indonesian, Hindi, Greek),
written to find faults (tests/fixtures/language_probes.json): correct answers,
some in another form than their contexts ("15.05.1935" for "15 мая 1935",
"平成24年", "100-процентной", "XII secolo"), wrong figures and dates, and
off-topic answers. Each fault they found has its own test; this one keeps the
end result: what the default verdict's metrics make of every probe."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.records import MetricResult
from transforms.decide.presets import DEFAULT_RULES
from transforms.decide.rules import decide
from transforms.score.metrics.coverage import key_fact_recall, reference_coverage
from transforms.score.metrics.groundedness import groundedness
from transforms.score.metrics.hallucination import hallucination, unsupported_facts

PROBES = json.loads((Path(__file__).parent / "fixtures" / "language_probes.json")
                    .read_text(encoding="utf-8"))
GOOD = {"grounded", "correct_other_form"}
WRONG_FACT = {"wrong_number", "wrong_date", "wrong_entity"}


def _scores(probe: dict) -> dict[str, MetricResult]:
    h = hallucination(probe["answer"], probe["contexts"], question=probe["question"],
                      references=[probe["reference"]])
    return {"hallucination": h, "unsupported_facts": unsupported_facts(h),
            "reference_coverage": reference_coverage(probe["answer"], probe["reference"]),
            "groundedness": groundedness(probe["question"], probe["contexts"], probe["answer"]),
            "key_fact_recall": key_fact_recall(probe["question"], probe["answer"],
                                               probe["contexts"])}


@pytest.mark.parametrize("probe", PROBES, ids=[p["id"] for p in PROBES])
def test_language_probe(probe):
    scores = _scores(probe)
    verdict, _ = decide(scores, DEFAULT_RULES, "PASS")
    facts = [f["text"] for f in scores["unsupported_facts"].details.get("facts", [])]
    if probe["kind"] in GOOD:
        assert facts == [], "a correct answer's figures, dates and names are all in its contexts"
        assert verdict != "FAIL"
        if probe["lang"] == "ko":  # particles stripped: the wording matches its reference
            assert scores["reference_coverage"].value >= 0.7
    elif probe["kind"] in WRONG_FACT:
        assert facts, "the wrong figure, date or name is caught"
        assert verdict != "PASS"
    else:  # off topic
        assert verdict != "PASS"


def test_the_probes_cover_ten_languages_and_every_kind():
    assert len({p["lang"] for p in PROBES}) == 10 and len(PROBES) == 61
    assert {p["kind"] for p in PROBES} == GOOD | WRONG_FACT | {"off_topic"}


SCRIPT_CASES = [  # correct answers in scripts 13a, rouge-score or whitespace cannot split
    {"case_id": "zh", "question": "中国的首都是哪里？", "answer": "中国的首都是北京，人口约两千万。",
     "expected_answer": "北京是中国的首都，人口大约两千万人。",
     "contexts": ["北京是中国的首都，人口大约两千万人。"]},
    {"case_id": "th", "question": "เมืองหลวงของประเทศไทยคืออะไร",
     "answer": "เมืองหลวงของประเทศไทยคือกรุงเทพมหานคร",
     "expected_answer": "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย",
     "contexts": ["กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย มีประชากรประมาณ 10 ล้านคน"]},
    {"case_id": "fw", "question": "What is the code?", "answer": "ＡＢＣ１２３",
     "expected_answer": "ABC123", "contexts": ["The code is ABC123."]},
    {"case_id": "emoji", "question": "How do they rate it?", "answer": "👨‍👩‍👧‍👦 👍🏽",
     "expected_answer": "👨‍👩‍👧‍👦 👍🏽", "contexts": ["Families rate it 👍🏽."]},
]


def test_other_scripts_through_a_run(tmp_path):
    """The fixes for other scripts as a run writes them to scores/ and results/
    (a real pipeline, the Parquet read back): Chinese BLEU with sacrebleu's zh
    tokenizer (it was 0) and rouge read by characters (it was null), Thai word
    metrics null instead of 0 (the answer FAILed), full-width exact_match 1 (it
    was 0), an emoji family one character (it was 7)."""
    import evalbeam
    result = evalbeam.evaluate(SCRIPT_CASES, output=str(tmp_path / "out"), progress=False,
                               config={"bots": [{"name": "recorded", "type": "precomputed"}],
                                       "embeddings": {"provider": "hashing"}})
    scores = {(r["case_id"], r["metric"]): r for r in result.scores().to_pylist()}
    verdicts = {r["case_id"]: r["verdict"] for r in result.results().to_pylist()}
    assert scores[("zh", "bleu")]["value"] == pytest.approx(0.4472, abs=1e-4)
    assert "tok:zh" in json.loads(scores[("zh", "bleu")]["details"])["signature"]
    assert scores[("zh", "rougeL")]["value"] == pytest.approx(0.7333, abs=1e-4)
    for metric in ("keyword_recall", "hallucination", "groundedness", "completeness"):
        assert scores[("th", metric)]["value"] is None
        assert "Thai" in scores[("th", metric)]["error"]
    assert verdicts["th"] != "FAIL" and verdicts["zh"] == "PASS"
    assert scores[("fw", "exact_match")]["value"] == 1.0
    assert scores[("emoji", "answer_length")]["value"] == 3.0  # family, space, thumbs up
