"""Sentences: the units a text is read in."""
from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?؟])\s+|(?<=[。！？；])\s*|\n+")


def split_sentences(text: str) -> list[str]:
    """Sentences, ended by . ! ? ؟ and a space, by 。！？； or by a line break."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


# Western sentence ends only: the pieces a context's "May 3" is dated in by
# a year of the same piece (empty pieces kept)
_WESTERN_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def western_sentence_pieces(text: str) -> list[str]:
    """The text split after . ! ? and a space, and at line breaks, unstripped."""
    return _WESTERN_SENTENCE_END.split(text)
