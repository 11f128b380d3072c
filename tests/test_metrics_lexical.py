"""Surface metrics: exact match, keyword recall, answer length, politeness."""
from __future__ import annotations

import unicodedata

import pytest

from transforms.score.metrics.lexical import (
    DEFAULT_POLITENESS_MARKERS,
    MAX_LISTED_MISSING,
    answer_length,
    exact_match,
    keyword_recall,
    politeness,
)


# --- exact_match ------------------------------------------------------------

@pytest.mark.parametrize("answer, expected", [
    ("Thirty days", "thirty days"),
    ("  thirty\n\tdays ", "Thirty Days"),
    ("ÉTÉ", "été"),
    ("退款政策", "退款政策"),
])
def test_exact_match_ignores_case_and_whitespace(answer, expected):
    assert exact_match(answer, expected).value == 1.0


def test_exact_match_reads_canonically_equal_texts_as_equal():
    """The same words typed on two keyboards: "café" as one code point (NFC) or
    as "e" and a combining accent (NFD, as macOS text and many copy-pastes give
    it) look identical, and keyword_recall already reads them as one token."""
    nfc, nfd = "Café résumé", unicodedata.normalize("NFD", "café résumé")
    assert nfc != nfd
    assert exact_match(nfc, nfd).value == 1.0
    assert exact_match(nfd, nfc).value == 1.0


@pytest.mark.parametrize("answer, expected", [
    ("Thirty days.", "thirty days"),  # punctuation is part of the answer
    ("thirty-days", "thirty days"),
    ("30 days", "thirty days"),
    ("", "thirty days"),
])
def test_exact_match_mismatch_is_zero(answer, expected):
    result = exact_match(answer, expected)
    assert result.value == 0.0 and result.error is None


@pytest.mark.parametrize("expected", [None, "", "  \n "])
def test_exact_match_without_expected_is_null(expected):
    result = exact_match("anything", expected)
    assert result.value is None and "expected" in result.error


# --- keyword_recall ---------------------------------------------------------

def test_keyword_recall_counts_distinct_expected_tokens():
    # E = {refunds, take, 30, days}; the answer has take/30/days but "refund", not "refunds".
    result = keyword_recall("A refund can take 30 days, days!", "Refunds take 30 days")
    assert result.value == pytest.approx(3 / 4)
    assert result.details["matched"] == 3
    assert result.details["missing"] == 1
    assert result.details["missing_tokens"] == ["refunds"]


def test_keyword_recall_full_and_zero():
    assert keyword_recall("Yes, 10,000 users.", "10,000 users yes").value == 1.0
    zero = keyword_recall("No idea.", "Refunds take 30 days")
    assert zero.value == 0.0 and zero.error is None


def test_keyword_recall_caps_listed_missing_tokens():
    expected = " ".join(f"word{i}" for i in range(50))
    result = keyword_recall("", expected)
    assert result.value == 0.0
    assert result.details["missing"] == 50
    assert len(result.details["missing_tokens"]) == MAX_LISTED_MISSING


@pytest.mark.parametrize("expected", ["", "?!", " ... "])
def test_keyword_recall_null_when_expected_has_no_tokens(expected):
    result = keyword_recall("some answer", expected)
    assert result.value is None and "no tokens" in result.error


def test_keyword_recall_other_scripts():
    # Arabic (right-to-left) words are tokens like any other.
    assert keyword_recall("مرحبا", "مرحبا بك").value == pytest.approx(0.5)
    assert keyword_recall("שלום עולם", "שלום").value == 1.0
    # Chinese has no spaces: each ideograph is a token (as sacrebleu's zh tokenizer),
    # so a partial answer gets partial credit instead of all or nothing.
    assert keyword_recall("退款政策是三十天", "退款政策是三十天").value == 1.0
    assert keyword_recall("退款政策", "退款政策是三十天").value == 0.5


# --- answer_length ----------------------------------------------------------

def test_answer_length_counts_characters_and_tokens():
    result = answer_length("Héllo, wörld!")
    assert result.value == 13.0
    assert result.details == {"tokens": 2, "chars": 13, "code_points": 13}


def test_answer_length_of_empty_and_other_scripts():
    assert answer_length("").value == 0.0 and answer_length("").details["tokens"] == 0
    arabic = answer_length("مرحبا بك")
    assert arabic.value == 8.0 and arabic.details["tokens"] == 2
    assert answer_length(None).value is None


# --- politeness -------------------------------------------------------------

def test_politeness_two_distinct_markers_saturate():
    result = politeness("Please note: I'm happy to help with that!")
    assert result.value == 1.0
    assert set(result.details["markers"]) == {"please", "happy to help"}


def test_politeness_one_marker_is_half_and_repeats_count_once():
    assert politeness("Sorry, sorry, SORRY.").value == 0.5
    assert politeness("please PLEASE please").details["markers"] == ["please"]


def test_politeness_matches_whole_words_and_phrases_only():
    assert politeness("I was displeased and unhappy to helpdesk staff.").value == 0.0
    assert politeness("We are happy\nto   help.").value == 0.5  # any whitespace inside a phrase
    assert politeness("Our team can help you, please ask.").value == 1.0
    assert politeness("").value == 0.0


def test_politeness_all_default_markers_clip_to_one():
    text = "Please, sorry, happy to help, we can help."
    result = politeness(text)
    assert result.value == 1.0
    assert len(result.details["markers"]) == len(DEFAULT_POLITENESS_MARKERS)


def test_politeness_custom_markers():
    assert politeness("Merci beaucoup, s'il vous plaît", markers=("merci", "s'il vous plaît")).value == 1.0
    assert politeness("Please", markers=("merci",)).value == 0.0


def test_politeness_other_scripts_do_not_crash():
    assert politeness("شكرا لك، من فضلك").value == 0.0
    assert politeness("请稍等，please").value == 0.5


def test_full_width_punctuation_after_a_figure_in_chinese_is_not_part_of_the_token():
    from transforms.text.tokens import tokenize
    assert tokenize("最低要求 Java 17，发布时") == ["最", "低", "要", "求", "java", "17", "发", "布", "时"]
    assert tokenize("Spring Boot 3.0版") == ["spring", "boot", "3.0", "版"]


@pytest.mark.parametrize("text, words", [
    ("दिल्ली भारत की राजधानी है।", ["दिल्ली", "भारत", "की", "राजधानी", "है"]),  # Hindi: vowel signs, virama
    ("কলকাতা পশ্চিমবঙ্গের রাজধানী", ["কলকাতা", "পশ্চিমবঙ্গের", "রাজধানী"]),  # Bengali
    ("சென்னை தமிழ்நாட்டின் தலைநகரம்", ["சென்னை", "தமிழ்நாட்டின்", "தலைநகரம்"]),  # Tamil
    ("تُسترد الاشتراكات السنوية", ["تُسترد", "الاشتراكات", "السنوية"]),  # Arabic with a damma
    ("שָׁלוֹם עוֹלָם", ["שָׁלוֹם", "עוֹלָם"]),  # Hebrew with vowel points
])
def test_a_word_keeps_its_combining_marks(text, words):
    """re's \\w leaves out most combining marks, so "दिल्ली" was cut into द, ल, ल
    and Hindi keyword recall compared single consonants."""
    from transforms.text.tokens import tokenize
    assert tokenize(text) == words


def test_keyword_recall_of_hindi_compares_words_not_consonants():
    # "दाल" (lentils) is not "दिल्ली" (Delhi): before, both were the consonants द, ल and
    # the recall was 1.0
    assert keyword_recall("दाल", "दिल्ली").value == 0.0


@pytest.mark.parametrize("answer, expected", [
    ("ＡＢＣ１２３", "ABC123"),  # full-width letters and digits (CJK keyboards)
    ("退款ＩＤ：ＡＢ－１２", "退款ID:AB-12"),  # full-width punctuation in Chinese
    ("ｶﾀｶﾅ", "カタカナ"),  # half-width katakana
    ("ﬁle", "file"),  # a ligature
    ("STRASSE", "Straße"),  # full case folding, not lower()
    ("١٨٨٩", "1889"),  # Arabic-Indic digits, as tokenize reads them
    ("東京　タワー", "東京 タワー"),  # the ideographic space is a space
])
def test_exact_match_folds_compatibility_forms(answer, expected):
    """A user sees these as the same text; NFC and lower() did not, so a
    full-width "ＡＢＣ１２３" against "ABC123" was 0."""
    assert exact_match(answer, expected).value == 1.0


def test_exact_match_still_tells_different_texts_apart():
    assert exact_match("ABC124", "ＡＢＣ１２３").value == 0.0
    assert exact_match("東京", "京都").value == 0.0


@pytest.mark.parametrize("text, chars, code_points", [
    ("👨‍👩‍👧‍👦", 1, 7),  # a family: four people joined by zero-width joiners
    ("👍🏽", 1, 2),  # a skin-tone modifier
    ("🇯🇵", 1, 2),  # a flag: two regional indicators
    ("क्षि", 1, 4),  # a Devanagari conjunct with its vowel sign
    ("नमस्ते", 3, 6),  # न म स्ते
    ("cafe\u0301", 4, 5),  # e and a combining accent
    ("한국어", 3, 3),
    ("line\r\nbreak", 10, 11),  # CR LF is one line break
])
def test_answer_length_counts_what_a_reader_sees_as_characters(text, chars, code_points):
    """len() counted code points: a family emoji was 7 characters, a Devanagari
    conjunct 4, so a limit on answer length hit Hindi and emoji answers early."""
    result = answer_length(text)
    assert result.value == chars and result.details["chars"] == chars
    assert result.details["code_points"] == code_points
