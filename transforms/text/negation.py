"""Negation: the words that deny a statement, per language.

A sentence that restates a source sentence with the opposite polarity ("is
contagious" / "is not contagious") says the opposite; a limit ("no more than
3") or a widening ("not only") denies nothing.
"""
from __future__ import annotations

NEGATION_CUES: dict[str, frozenset[str]] = {
    "en": frozenset("not no never none nobody nothing neither nor cannot can't won't isn't "
                    "aren't wasn't weren't doesn't don't didn't hasn't haven't hadn't "
                    "shouldn't wouldn't couldn't mustn't without unable".split()),
    "de": frozenset("nicht kein keine keinen keinem keiner keines nie niemals ohne weder "
                    "nirgends nichts".split()),
    "fr": frozenset("ne n' pas jamais aucun aucune sans ni nullement".split()),
    "es": frozenset("no nunca jamás ningún ninguna ninguno sin tampoco ni".split()),
    "it": frozenset("non mai nessun nessuna nessuno senza né".split()),
    "pt": frozenset("não nunca jamais nenhum nenhuma sem nem".split()),
    "nl": frozenset("niet geen nooit zonder noch".split()),
    "ar": frozenset("لا لم لن ليس ليست ليسوا غير بدون دون ما".split()),
}
# Scripts without spaces: negation is a substring of the sentence, and only
# multi-character cues are safe (不 alone is also in 不同, "different").
NEGATION_SUBSTRINGS: dict[str, tuple[str, ...]] = {
    "zh": ("没有", "不是", "不会", "不能", "不可", "无法", "并非", "不再", "禁止", "从未", "不需要",
           "不支持", "不允许", "不得", "未能", "不包括", "不属于", "不适用", "没"),
    "ja": ("ない", "ません", "なかった", "できない", "禁止"),
}


# A cue followed by one of these widens or bounds a statement instead of denying
# it: "not only", "not counting", "no matter"; and before a figure, "no more than
# 2,400 mg", "nicht mehr als 3", "pas plus de 5", "no más de 4" (a limit, which
# the source may state as "up to 2,400 mg" or "a maximum of").
_WIDENING = frozenset("only counting including matter nur seulement solo sólo".split())
_BOUND = frozenset("more less fewer later earlier sooner greater higher lower mehr weniger "
                   "später früher plus moins más menos".split())


def _denies(tokens: list[str], i: int) -> bool:
    after = tokens[i + 1:i + 4]
    if not after:
        return True
    if after[0] in _WIDENING:
        return False
    return not (after[0] in _BOUND and any(_is_figure(t) for t in after[1:]))


def _is_figure(token: str) -> bool:
    return token[:1].isdigit() or token in _SMALL_NUMBERS


_SMALL_NUMBERS = frozenset("one two three four five six seven eight nine ten twelve twenty "
                           "hundred thousand".split())


def is_negated(text: str, tokens: list[str], lang: str) -> bool:
    """Whether a sentence carries a negation cue of its language that denies
    something (not a limit such as "no more than 3")."""
    subs = NEGATION_SUBSTRINGS.get(lang)
    if subs is not None:
        return any(s in text for s in subs)
    cues = negation_cues(lang)
    return any(t in cues and _denies(tokens, i) for i, t in enumerate(tokens))


def negation_cues(lang: str) -> frozenset[str]:
    """The language's negation words (English's for a language without a list)."""
    return NEGATION_CUES.get(lang, NEGATION_CUES["en"])
