"""A scripted judge for the fake OpenAI server: answers evalbeam's judge
prompts the way a careful model would, by simple deterministic rules, so
tests can assert each metric's formula on known verdicts.

    judge = ScriptedJudge()
    server.set_chat_handler(judge)

Rules (content words = tokens longer than 3 characters):
- statements: the fenced text split into sentences;
- entities: capitalised words and numbers of the reference;
- a claim is supported by a text when all its content words occur in it;
- a context is useful when it shares at least two content words with the reference;
- rubric score: `rubric_scores[metric]` (default 4);
- safety: `safety_votes[category]` is a list of flags handed out one per vote request
  (for any answer containing UNSAFE_MARKER), else 0.
`overrides[task]` replaces the reply of a task (a string, or a function of the
request and the rule-based reply); a repair request is task "repair".
"""
from __future__ import annotations

import json
import re
import threading
from collections import Counter, defaultdict
from typing import Any

_BLOCK = re.compile(r"\[\[([A-Z][A-Z ]*?)(?: ([ACRT]\d+))? ([0-9a-f]{10,16})\]\]\n(.*?)\n"
                    r"\[\[/\1(?: \2)? \3\]\]", re.S)
UNSAFE_MARKER = "UNSAFE"
_TASKS = (  # a repair request is recognised by its last message, not by these
    ("Break the ANSWER", "answer_statements"),
    ("Break the REFERENCE", "reference"),
    ("Compare the claims", "correctness"),
    ("Decide for each STATEMENT", "grounding"),
    ("For each retrieved CONTEXT", "context_usefulness"),
    ("Rate how relevant", "judge_relevance"),
    ("Rate how faithful", "judge_faithfulness"),
    ("Rate how safe", "judge_safety"),
    ("Rate how robustly", "judge_robustness"),
    ("For each category below", "safety"),
    ("for one category", "safety_category"),
    ("information the user gave in earlier turns", "knowledge_retention"),
    ("For each ASSISTANT turn, decide whether it is relevant", "conversation_relevancy"),
    ("was given the ROLE below", "role_adherence"),
    ("List what the user", "conversation_completeness"),
    ("Evaluate the material below by these criteria", "rubric"),
)
FORGOT_MARKER = "FORGOT"   # an assistant turn with it forgets what the user said
OFF_ROLE_MARKER = "As an AI"  # an assistant turn with it breaks its role
CATEGORIES = ("harmful", "malicious", "bias", "toxic", "hateful", "sexual", "violent",
              "insensitive", "self_harm", "manipulative")


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3}


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


def supported(claim: str, text: str) -> int:
    words = content_words(claim)
    return int(bool(words) and words <= content_words(text))


def blocks(prompt: str) -> dict[str, list[tuple[str | None, str]]]:
    """label -> [(item id, text)] of every fenced block in a prompt."""
    out: dict[str, list[tuple[str | None, str]]] = defaultdict(list)
    for label, item, _, text in _BLOCK.findall(prompt):
        out[label].append((item or None, text))
    return out


def task_of(prompt: str) -> str:
    for marker, task in _TASKS:
        if marker in prompt:
            return task
    return "unknown"


class ScriptedJudge:
    def __init__(self, rubric_scores: dict[str, float] | None = None,
                 safety_votes: dict[str, list[int]] | None = None,
                 overrides: dict[str, Any] | None = None, reasoning: str | None = None):
        self.rubric_scores = dict(rubric_scores or {})
        self.safety_votes = dict(safety_votes or {})
        self.overrides = dict(overrides or {})
        self.reasoning = reasoning
        self.tasks: Counter = Counter()
        self.prompts: list[str] = []
        self._vote_turn: Counter = Counter()
        self._lock = threading.Lock()

    def __call__(self, request: dict) -> Any:
        messages = request["messages"]
        prompt = "\n".join(m.get("content") or "" for m in messages if m["role"] == "user")
        last = messages[-1]["content"]
        task = "repair" if "Your reply could not be used" in last else task_of(messages[1]["content"])
        n = int(request.get("n") or 1)
        with self._lock:
            self.tasks[task] += 1
            self.prompts.append(prompt)
        if task == "repair":
            original = task_of(messages[1]["content"])
            reply = self.overrides.get("repair")
            text = reply(request, self._reply(original, messages[1]["content"])) if callable(
                reply) else reply if reply is not None else json.dumps(
                self._reply(original, messages[1]["content"]))
            return self._message(text)
        texts = []
        for _ in range(n):
            rule = self._reply(task, messages[1]["content"])
            override = self.overrides.get(task)
            if callable(override):
                texts.append(override(request, rule))
            elif override is not None:
                texts.append(override)
            else:
                texts.append(json.dumps(rule))
        if n == 1:
            return self._message(texts[0])
        return {"id": "chatcmpl-scripted", "object": "chat.completion", "created": 0,
                "model": request.get("model"),
                "choices": [{"index": i, "message": {"role": "assistant", "content": t},
                             "finish_reason": "stop"} for i, t in enumerate(texts)],
                "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": 20 * n,
                          "total_tokens": len(prompt) // 4 + 20 * n}}

    def _message(self, text: str) -> dict:
        out: dict[str, Any] = {"content": text}
        if self.reasoning:
            out["reasoning_content"] = self.reasoning
        return out

    def _reply(self, task: str, prompt: str) -> dict:
        b = blocks(prompt)
        text = lambda label: b[label][0][1] if b.get(label) else ""  # noqa: E731
        if task == "answer_statements":
            return {"statements": sentences(text("ANSWER"))}
        if task == "reference":
            ref = text("REFERENCE")
            ents = re.findall(r"\b[A-Z][a-z]+\b|\b\d+\b", ref)
            return {"statements": sentences(ref),
                    "entities": [e for e in dict.fromkeys(ents) if e not in ("The", "You", "We")]}
        if task == "correctness":
            a = dict(b.get("ANSWER CLAIM", []))
            r = dict(b.get("REFERENCE CLAIM", []))
            a_text, r_text = " ".join(a.values()), " ".join(r.values())
            return {"verdicts": [{"id": i, "verdict": supported(t, r_text), "reason": "rule"}
                                 for i, t in a.items()]
                    + [{"id": i, "verdict": supported(t, a_text), "reason": "rule"}
                       for i, t in r.items()]}
        if task == "grounding":
            ctx = " ".join(t for _, t in b.get("CONTEXT", []))
            return {"verdicts": [{"id": i, "verdict": supported(t, ctx)}
                                 for i, t in b.get("STATEMENT", [])]}
        if task == "context_usefulness":
            ref = content_words(text("REFERENCE"))
            return {"verdicts": [{"id": i, "verdict": int(len(content_words(t) & ref) >= 2)}
                                 for i, t in b.get("CONTEXT", [])]}
        if task in ("knowledge_retention", "conversation_relevancy", "role_adherence"):
            return {"verdicts": _turn_verdicts(task, _turns(b))}
        if task == "conversation_completeness":
            turns = _turns(b)
            return {"intentions": [
                {"intention": text[:40], "satisfied": int(bool(
                    content_words(text) & content_words(turns[k + 1][2])))}
                for k, (_, role, text) in enumerate(turns[:-1]) if role == "USER"]}
        if task.startswith("judge_") or task == "rubric":
            score = self.rubric_scores.get(task, 4)
            return {"score": score, "reason": f"scripted {task}"}
        if task in ("safety", "safety_category"):
            cats = [c for c in CATEGORIES if f'"{c}"' in prompt.split("Reply with")[-1]]
            unsafe = UNSAFE_MARKER in text("ANSWER")
            out: dict[str, Any] = {}
            with self._lock:
                for c in cats:
                    flags = self.safety_votes.get(c, [])
                    k = self._vote_turn[c] if unsafe else 0
                    if unsafe:
                        self._vote_turn[c] += 1
                    out[c] = flags[k % len(flags)] if unsafe and flags else 0
            out["reason"] = "scripted"
            return out
        return {"error": f"unknown task {task}"}


def _items(numbered: str) -> dict[str, str]:
    out = {}
    for line in numbered.splitlines():
        m = re.match(r"([AR]\d+): (.*)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def _turns(b: dict) -> list[tuple[str, str, str]]:
    """(id, role, text) of a conversation's fenced turns, in order."""
    turns = [(i, role, t) for role in ("SYSTEM", "USER", "ASSISTANT") for i, t in b.get(role, [])]
    return sorted(turns, key=lambda x: int(x[0][1:]))


def _turn_verdicts(task: str, turns: list[tuple[str, str, str]]) -> list[dict]:
    out = []
    for k, (i, role, text) in enumerate(turns):
        if role != "ASSISTANT":
            continue
        if task == "knowledge_retention":
            ok = FORGOT_MARKER not in text
        elif task == "role_adherence":
            ok = OFF_ROLE_MARKER not in text
        else:  # relevant: shares a content word with the user turn it answers
            ok = bool(content_words(text) & content_words(turns[k - 1][2]))
        out.append({"id": i, "verdict": int(ok), "reason": "rule"})
    return out
