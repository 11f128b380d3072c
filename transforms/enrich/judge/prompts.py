"""Judge prompt templates: packaged files, overridable per template by config.

Untrusted text (questions, answers, references, contexts, and statements the
judge extracted from them) enters a prompt only inside a fenced block, one
block per item:

    [[STATEMENT A1 3f9c0a2b1d7e4c55]]
    ...text...
    [[/STATEMENT A1 3f9c0a2b1d7e4c55]]

whose id is a hash of the text salted with a secret of the worker process
(random, never written): the text cannot close its own block, and cannot
forge the closing marker of another block either, since it cannot know the
salt. A line such as "R1: ..." inside a claim stays inside that claim's
block. The system prompt tells the judge that block content is data.
Placeholders are filled in one pass, so a `{question}` inside an answer stays
literal.

The salt must not defeat the call cache: each fenced text also carries its
`plain` form (unsalted ids), and the cache key is computed from the prompt
rendered with those (`render(..., plain=True)`).
"""
from __future__ import annotations

import hashlib
import re
import secrets
from importlib import resources
from typing import Mapping, Sequence

from transforms.text.templates import fill_placeholders

TEMPLATE_NAMES = ("system", "answer_statements", "reference", "correctness", "grounding",
                  "context_usefulness", "judge_relevance", "judge_faithfulness", "judge_safety",
                  "judge_robustness", "safety", "safety_category")
PLACEHOLDERS = ("question", "answer", "reference", "contexts", "statements", "answer_statements",
                "reference_statements", "categories", "category", "definition", "flag_fields")
# Conversation metrics and config rubrics (transforms/enrich/judge/conversation.py)
TEMPLATE_NAMES += ("knowledge_retention", "conversation_relevancy", "role_adherence",
                   "conversation_completeness", "rubric")
PLACEHOLDERS += ("conversation", "turn_ids", "role", "criteria", "steps", "scale", "inputs")
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


def packaged_template(name: str) -> str:
    return resources.files("transforms").joinpath(f"data/judge/{name}.txt").read_text("utf-8")


def load_templates(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every template, the packaged text unless the config names a file for it."""
    out = {}
    for name in TEMPLATE_NAMES:
        path = (overrides or {}).get(name)
        if path:
            with open(path, encoding="utf-8") as fh:
                out[name] = fh.read()
        else:
            out[name] = packaged_template(name)
    return out


def required_placeholders(name: str) -> set[str]:
    """The placeholders of the packaged template (an override must keep them)."""
    return set(_PLACEHOLDER.findall(packaged_template(name)))


_SALT = secrets.token_bytes(16)  # per worker process; never written, never in a cache key


class Fenced(str):
    """A fenced block as sent (salted ids), with `plain`: the same block with
    unsalted ids, what the call cache's key is computed from."""

    plain: str

    def __new__(cls, salted: str, plain: str) -> "Fenced":
        obj = super().__new__(cls, salted)
        obj.plain = plain
        return obj


def _block(label: str, tag: str, text: str) -> str:
    return f"[[{label} {tag}]]\n{text}\n[[/{label} {tag}]]"


def fence(label: str, text: str) -> Fenced:
    data = text.encode("utf-8", "surrogatepass")
    plain = hashlib.sha256(data).hexdigest()[:10]
    salted = hashlib.blake2b(data, key=_SALT, digest_size=8).hexdigest()
    return Fenced(_block(label, salted, text), _block(label, plain, text))


def join_fenced(parts: Sequence[str], sep: str = "\n\n") -> Fenced:
    """Blocks (fenced or plain text) joined, keeping the unsalted form: a plain
    `sep.join` would lose it, and the cache key would hold the salted ids."""
    parts = [p for p in parts if p]
    return Fenced(sep.join(parts), sep.join(getattr(p, "plain", p) for p in parts))


def fence_items(label: str, items: Sequence[tuple[str, str]]) -> Fenced:
    """Numbered items (id, text), each in its own block: [[CONTEXT C1 <id>]]..."""
    return join_fenced([fence(f"{label} {item_id}", text) for item_id, text in items])


def render(template: str, fields: Mapping[str, str], plain: bool = False) -> str:
    """Fill placeholders in one pass; a placeholder without a field is an error.
    plain: with the unsalted form of fenced fields (for the call cache's key)."""
    if plain:
        fields = {k: getattr(v, "plain", v) for k, v in fields.items()}
    return fill_placeholders(template, fields, PLACEHOLDERS)
