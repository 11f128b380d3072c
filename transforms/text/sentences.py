"""The sentences of an answer, as the embedding metrics read it (answer_relevance
embeds each; the grounding classifier checks each against the passages).

Below the metrics and the Enrich stage, which both need the same split: the
Enrich stage embeds exactly the sentences the metric will score.
"""
from __future__ import annotations

import re

MAX_SENTENCES = 64  # answer_relevance embeds at most this many sentences of an answer
# Latin/Arabic ends need a following space ("3.5" is no end); CJK ends need none.
_SENTENCE_END = re.compile(r"(?<=[.!?؟])\s+|(?<=[。！？])\s*|\n+")
_LIST_MARKER = re.compile(r"^\s*(?:[-*•·–]|\(?\w{1,2}[.)])\s+")


def answer_sentences(text: str) -> list[str]:
    """Sentences (or lines) of an answer, stripped; list markers ("1.", "-", "a)")
    are not sentences, and are taken off the item they open."""
    out = []
    for piece in _SENTENCE_END.split(text):
        piece = _LIST_MARKER.sub("", piece or "").strip()
        if piece and any(ch.isalnum() for ch in piece) and not re.fullmatch(r"\w{1,2}[.)]?", piece):
            out.append(piece)
    return out
