"""reference_coverage and key_fact_recall (transforms/score/metrics/coverage.py)."""
from __future__ import annotations

import pytest

from transforms.score.metrics.coverage import key_fact_recall, other_language, reference_coverage

REFERENCE = ("Every new account can start one 30-day free trial of Premier. You are not "
             "charged if you cancel before it ends, and a reminder email is sent 3 days "
             "before the first charge.")


def test_the_reference_said_in_other_words_and_figures_by_value():
    full = reference_coverage("Every new account can start a thirty-day free trial of Premier; "
                              "cancel before it ends and you are not charged. A reminder email "
                              "is sent three days before the first charge.", REFERENCE)
    part = reference_coverage("You can try Premier for free.", REFERENCE)
    assert full.value >= 0.85 > 0.3 > part.value
    assert full.details["values_found"] == ["3", "30"]


def test_a_wrong_figure_is_not_found():
    right = reference_coverage("A 30-day trial; a reminder 3 days before the charge.", REFERENCE)
    wrong = reference_coverage("A 14-day trial; a reminder 3 days before the charge.", REFERENCE)
    assert right.value > wrong.value
    assert wrong.details["values_found"] == ["3"]


@pytest.mark.parametrize("answer, found", [
    ("Да. Каждый новый аккаунт может один раз бесплатно попробовать Premier в течение 30 "
     "дней; напоминание приходит за 3 дня до первого платежа.", ["3", "30"]),
    ("每个新账户可以免费试用 Premier 30 天，首次扣费前 3 天会收到提醒邮件。", ["3", "30"]),
    ("כל חשבון חדש יכול לנסות את Premier בחינם למשך 14 ימים.", []),
    ("Cada cuenta nueva puede probar Premier gratis durante 30 días; el aviso llega 3 días "
     "antes del primer cobro.", ["3", "30"]),
])
def test_an_answer_in_another_script_is_compared_by_its_figures_and_dates(answer, found):
    # its words cannot match the English reference's; before, a correct Russian answer
    # scored 0.3 and got WARN, a Hebrew one FAIL
    result = reference_coverage(answer, REFERENCE)
    assert result.value == len(found) / 2
    assert result.details["values_found"] == found
    assert result.details["compared"].startswith("figures and dates only (the answer is in ")


def test_across_scripts_without_figures_is_null_with_the_reason():
    result = reference_coverage("Да, конечно, пробный период есть.",
                                "Yes, every account can start a free trial.")
    assert result.value is None
    assert "no figures or dates to compare" in result.error


def test_a_chinese_answer_full_of_code_names_is_still_chinese():
    reference = "Linux 下 TIME_WAIT 固定持续 60 秒，由内核常量 TCP_TIMEWAIT_LEN 决定。"
    answer = ("TIME_WAIT 固定 60 秒：TCP_TIMEWAIT_LEN 是内核常量，sysctl net.ipv4.tcp_fin_timeout "
              "改的是 FIN_WAIT_2。")
    assert other_language(answer, reference) is None
    assert "compared" not in reference_coverage(answer, reference).details


def test_nulls_say_why():
    assert reference_coverage(None, REFERENCE).error == "no answer"
    assert reference_coverage("Yes.", "  ").error == "no expected_answer"
    assert key_fact_recall("How long is the trial?", "30 days.", []).error == "no contexts"


def test_a_short_answer_in_the_same_script_is_compared_word_by_word():
    # too short for the language vote: its words are compared as usual
    assert other_language("Premier: 30 days.", REFERENCE) is None
    assert "compared" not in reference_coverage("Premier: 30 days.", REFERENCE).details


def test_across_languages_an_answer_that_states_no_figure_is_null_not_zero():
    # "不会" (no) answers the question; the reference's figures are side facts the
    # answer need not repeat. Before: 0.0, and the verdict FAILed a correct answer.
    reference = ("No. Lumenfold never sells customer data. The current privacy policy, "
                 "version 4.2, took effect on October 1, 2024.")
    result = reference_coverage("不会。Lumenfold 从不出售客户数据。", reference)
    assert result.value is None
    assert "the answer states no figure or date to compare" in result.error
    # a figure that is stated is compared: a wrong version is 0, not null
    assert reference_coverage("不会。隐私政策版本 5.1。", reference).value == 0.0


def test_a_short_answer_in_a_script_without_spaces_is_another_language():
    # five Han characters are below other_scripts' letter count, but nothing of it is Latin
    assert other_language("我们不知道。", REFERENCE) == ("zh", "en")
    assert other_language("42", REFERENCE) is None  # figures have no language


def test_the_words_of_a_figure_found_in_another_form_are_found_with_it():
    # the answer states the reference's date as "15.05.1935": before, the date counted
    # as found but its words "15", "мая", "1935" as missing, a double penalty
    ref = "Метро открылось 15 мая 1935 года."
    result = reference_coverage("Метро открылось 15.05.1935.", ref)
    assert result.value == 1.0 and result.details["missing"] == []
    wrong = reference_coverage("Метро открылось 16.05.1935.", ref)
    assert wrong.value < 0.5 and "мая" in wrong.details["missing"]


# --- text without spaces between words (Thai, Lao, Myanmar, Khmer) -----------

THAI_Q = "เมืองหลวงของประเทศไทยคืออะไร"
THAI_ANSWER = "เมืองหลวงของประเทศไทยคือกรุงเทพมหานคร"  # correct: "the capital of Thailand is Bangkok"
THAI_CONTEXT = "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย มีประชากรประมาณ 10 ล้านคน"


def test_word_metrics_of_thai_text_are_null_not_a_misleading_zero():
    """Thai has no spaces between words and no segmenter is installed, so a
    sentence was one token: this correct answer scored keyword_recall 0,
    reference_coverage 0, completeness 0, hallucination 1.0 and groundedness 0.07,
    and the run FAILed it. Each metric now says it cannot compare the words."""
    from transforms.score.metrics.groundedness import groundedness
    from transforms.score.metrics.hallucination import hallucination
    from transforms.score.metrics.lexical import keyword_recall
    from transforms.score.metrics.relevance import IdfTable, completeness, lexical_relevance
    from transforms.text.scripts import UNSEGMENTED
    results = {
        "keyword_recall": keyword_recall(THAI_ANSWER, THAI_CONTEXT),
        "lexical_relevance": lexical_relevance(THAI_Q, THAI_ANSWER, IdfTable.fit([THAI_Q])),
        "completeness": completeness(THAI_Q, THAI_ANSWER),
        "hallucination": hallucination(THAI_ANSWER, [THAI_CONTEXT], question=THAI_Q),
        "groundedness": groundedness(THAI_Q, [THAI_CONTEXT], THAI_ANSWER),
        "reference_coverage": reference_coverage(THAI_ANSWER, THAI_CONTEXT),
        "key_fact_recall": key_fact_recall(THAI_Q, THAI_ANSWER, [THAI_CONTEXT]),
    }
    for name, result in results.items():
        assert result.value is None and result.error.startswith(UNSEGMENTED), name


def test_thai_figures_are_still_compared_by_reference_coverage():
    result = reference_coverage("ประชากรประมาณ 10 ล้านคน", THAI_CONTEXT)
    assert result.value == 1.0 and "figures and dates only" in result.details["compared"]


def test_one_thai_name_in_an_english_text_keeps_the_word_metrics():
    from transforms.score.metrics.lexical import keyword_recall
    assert keyword_recall("Bangkok (กรุงเทพ) is the capital of Thailand.",
                          "The capital of Thailand is Bangkok").value == 1.0


def test_hallucination_of_thai_text_checks_its_figures():
    """With the words of Thai text out of reach, its figures still say something:
    50 million people where the context says 10 is unsupported (S_facts alone, as
    for an answer in another language than its contexts)."""
    from transforms.score.metrics.hallucination import hallucination
    wrong = hallucination("ประชากรประมาณ 50 ล้านคน", [THAI_CONTEXT])
    right = hallucination("ประชากรประมาณ 10 ล้านคน", [THAI_CONTEXT])
    assert wrong.value == 1.0 and right.value == 0.0
    assert "figures, dates and names only" in wrong.details["compared"]
