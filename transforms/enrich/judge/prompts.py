"""Judge prompt templates: packaged files, overridable per template by config.

Untrusted text (questions, answers, references, contexts, and statements the
judge extracted from them) enters a prompt only inside a fenced block

    [[ANSWER 3f9c0a2b1d]]
    ...text...
    [[/ANSWER 3f9c0a2b1d]]

whose id is a hash of the text, so the text cannot close its own block, and
the system prompt tells the judge that block content is data. Placeholders
are filled in one pass, so a `{question}` inside an answer stays literal.
"""
from __future__ import annotations

import hashlib
import re
from importlib import resources
from typing import Mapping, Sequence

from transforms.text import fill_placeholders

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


def fence(label: str, text: str) -> str:
    tag = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
    return f"[[{label} {tag}]]\n{text}\n[[/{label} {tag}]]"


def fence_items(label: str, items: Sequence[tuple[str, str]]) -> str:
    """Numbered items (id, text), each in its own block: [[CONTEXT C1 <hash>]]..."""
    return "\n\n".join(fence(f"{label} {item_id}", text) for item_id, text in items)


def render(template: str, fields: Mapping[str, str]) -> str:
    """Fill placeholders in one pass; a placeholder without a field is an error."""
    return fill_placeholders(template, fields, PLACEHOLDERS)
