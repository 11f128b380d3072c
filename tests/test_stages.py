"""Each Beam stage on its own with TestPipeline (FnApiRunner) + assert_that."""
from __future__ import annotations

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipeline.config import BotConfig
from transforms.decide.presets import SEED_RULES
from schemas.records import EvalCase, MetricResult, Turn
from schemas.tables import SCORES
from transforms.answer.bots import AnswerWith
from transforms.score.scoring import SCORERS, ScoreWith
from transforms.decide.verdict import ApplyVerdict
from transforms.publish.commit import move_into_place
from transforms.publish.write import WriteRows
from tests.conftest import FAQ_ROWS, write_cases
from tests.pipeline_helpers import read_table

CASES = [EvalCase("a", "How much is the Pro plan?", "It costs $12.", answer="It costs $12."),
         EvalCase("b", "Do you ship abroad?", None, answer=None)]


def _pipeline():
    return TestPipeline(runner="FnApiRunner")


def test_answer_with_every_bot(tmp_path):
    faq = write_cases(str(tmp_path / "faq.parquet"), FAQ_ROWS)
    bots = [BotConfig("faq", "faq_match", faq=faq), BotConfig("rec", "precomputed")]
    with _pipeline() as p:
        turns = (p | beam.Create([CASES]) | beam.ParDo(AnswerWith(bots))
                 .with_outputs(AnswerWith.CALLS, main="turns")).turns
        assert_that(turns | beam.Map(lambda t: (t.case.case_id, t.bot, t.answer, t.error)),
                    equal_to([("a", "faq", "The Pro plan costs $12 per month.", None),
                              ("a", "rec", "It costs $12.", None),
                              ("b", "faq", "We ship to the US, Canada and Mexico.", None),
                              ("b", "rec", None, "no recorded answer in the 'answer' column")]))


def test_score_with_adds_metrics_and_nulls_with_reasons():
    bleu = next(s for s in SCORERS if s.name == "bleu")
    turns = [Turn(CASES[0], "rec", "It costs $12."), Turn(CASES[1], "rec", "Yes.")]
    with _pipeline() as p:
        scored = p | beam.Create(turns) | beam.ParDo(ScoreWith(bleu, {}))
        assert_that(scored | beam.Map(lambda t: (t.case.case_id, t.scores["bleu"].value,
                                                 t.scores["bleu"].error)),
                    equal_to([("a", 1.0, None), ("b", None, "no expected_answer")]))


def test_apply_verdict_stage():
    turns = [Turn(CASES[0], "r", "x", scores={"hallucination": MetricResult(0.9)}),
             Turn(CASES[0], "r", "x", scores={"hallucination": MetricResult(0.1),
                                             "lexical_relevance": MetricResult(0.5),
                                             "completeness": MetricResult(0.4)}),
             Turn(CASES[1], "r", None, error="timeout")]
    with _pipeline() as p:
        out = p | beam.Create(turns) | beam.ParDo(ApplyVerdict(SEED_RULES, "PASS"))
        assert_that(out | beam.Map(lambda t: t.verdict), equal_to(["FAIL", "WARN", "ERROR"]))


def test_write_rows_then_finalize_gives_hive_partitions(tmp_path):
    out = str(tmp_path)
    rows = [{"run_id": "r", "bot": bot, "case_id": str(i), "suite": None, "metric": "m",
             "value": float(i), "details": None, "error": None}
            for bot in ("x", "y") for i in range(25_000)]  # > one 10k-row group per file
    with _pipeline() as p:
        written = p | beam.Create(rows) | WriteRows(SCORES, out, "r", "2026-01-02", "att")
        files = written | beam.combiners.ToList()
        assert_that(files | beam.Map(lambda fs: sorted((f.partition, f.rows) for f in fs)),
                    equal_to([[((("run_date", "2026-01-02"), ("bot", "x")), 25_000),
                               ((("run_date", "2026-01-02"), ("bot", "y")), 25_000)]]))
        _ = files | beam.Map(lambda fs: move_into_place(out, "r", "att", fs))
    table = read_table(out, "scores")
    assert table.num_rows == 50_000
    assert sorted(set(table.column("bot").to_pylist())) == ["x", "y"]
    assert sum(table.column("value").to_pylist()) == 2 * sum(range(25_000))


def test_bots_judge_and_embedder_of_a_run_share_one_runtime(tmp_path):
    """An endpoint used by a bot, the embedder and the judge gets one client,
    so one rate limiter per worker process, not one per calling DoFn."""
    from pipeline.config import EmbeddingsConfig, EndpointConfig, JudgeConfig
    from transforms.enrich.embed import EmbedTurns
    from transforms.enrich.judge.stage import JudgeTurns
    endpoints = {"llm": EndpointConfig(base_url="http://127.0.0.1:9/v1")}
    cache = str(tmp_path / "calls.sqlite")
    dofns = [AnswerWith([BotConfig("chat", "chat", endpoint="llm", model="m")], endpoints, cache),
             EmbedTurns(EmbeddingsConfig("endpoint", "llm", "e"), endpoints,
                        frozenset({"vec:question"}), cache),
             JudgeTurns(JudgeConfig("llm", "m"), endpoints, ["faithfulness"], {}, cache)]
    for d in dofns:
        d.setup()
    try:
        assert len({id(d._runtime) for d in dofns}) == 1
        assert dofns[0]._runtime.client("llm").cache is not None
    finally:
        for d in dofns:
            d.teardown()


def test_reference_tokens_for_bertscore_idf_with_every_embedder():
    from pipeline.config import EmbeddingsConfig
    from transforms.score.corpus import TokenizeReferences
    for cfg, want in ((EmbeddingsConfig("endpoint", "llm", "e"), ["refunds", "take", "30", "days"]),
                      (EmbeddingsConfig("hashing"), ["refunds", "take", "30", "days"])):
        dofn = TokenizeReferences(cfg)
        dofn.setup()  # no runtime, no connection: only the tokenizer
        assert list(dofn.process("Refunds take 30 days.")) == [want]
