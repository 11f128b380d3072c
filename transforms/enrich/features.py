"""The names the Enrich step's outputs go by on a Turn (`Turn.features`), and the
local embedder's model names: light (no imports), so the scorer registry and
the config read them without importing the embedding stage or its models."""
from __future__ import annotations

# feature -> what it holds
VEC_QUESTION, VEC_EXPECTED, VEC_ANSWER = "vec:question", "vec:expected", "vec:answer"
SENTENCES = "sentences"            # (n_sentences_total, matrix of the first MAX_SENTENCES)
TOK_EXPECTED, TOK_ANSWER = "tok:expected", "tok:answer"
# Cases with several references: every reference's vectors / tokens, in order
# (VEC_EXPECTED and TOK_EXPECTED stay the first reference's).
VEC_REFERENCES, TOK_REFERENCES = "vec:references", "tok:references"
EMBED_ERROR = "embed_error"
# Only on a row one of whose vector texts the embedder read the start of only
# (the local MiniLM's 256 tokens, the multilingual model's 20,000 characters):
# {"question" | "answer" | "reference" | "reference <i>" (several) | "sentence <i>":
# (its tokens, the tokens read) or (its count, the count read, "characters")}.
# (Token vectors say it themselves: TokenVectors.total.)
CUT = "cut"
# embeddings.model values of the local provider
MINILM_MODELS = (None, "all-MiniLM-L6-v2")
MULTILINGUAL_MODELS = ("multilingual", "universal-sentence-encoder-multilingual-3")


def reference_role(i: int, n: int) -> str:
    """The name of reference i (1-based) of n in CUT and in a metric's details."""
    return "reference" if n == 1 else f"reference {i}"
