"""Checks the hand-written validation sources (validation/sources/*.jsonl).

One JSON object per line, one line per question:

    {"id": "hist-en-001", "domain": "history", "lang": "en",
     "question": "...", "contexts": ["...", "..."], "reference": "...",
     "answers": [{"kind": "grounded", "label": "good", "text": "..."}, ...]}

Run: python validation/check_sources.py [FILE ...]   (default: every source file)
Exit 1 with one line per problem.
"""
from __future__ import annotations

import glob
import json
import os
import re
import sys

GOOD_KINDS = {"grounded", "long_correct"}
HALLUCINATED_KINDS = {"wrong_number", "wrong_date", "wrong_entity", "swapped_entity",
                      "negation", "invented_list"}
POOR_KINDS = {"evasive", "restates_question", "partly_relevant"}
OFF_TOPIC = {"off_topic"}
KINDS = GOOD_KINDS | HALLUCINATED_KINDS | POOR_KINDS | OFF_TOPIC
LANGS = {"en", "de", "es", "fr", "zh", "ja", "ar", "he"}
CJK = {"zh", "ja"}
LONG_WORDS = 150        # long_correct: at least this many words ...
LONG_CJK_CHARS = 250    # ... or CJK characters


def length_ok(text: str, lang: str) -> bool:
    if lang in CJK:
        return len(re.findall(r"[\u3040-\u30ff\u3400-\u9fff]", text)) >= LONG_CJK_CHARS
    return len(text.split()) >= LONG_WORDS


def check_record(rec: dict, where: str, lang_of_file: str | None) -> list[str]:
    problems = []
    for key, typ in (("id", str), ("domain", str), ("lang", str), ("question", str),
                     ("contexts", list), ("reference", str), ("answers", list)):
        if not isinstance(rec.get(key), typ):
            problems.append(f"{where}: '{key}' must be a {typ.__name__}")
    if problems:
        return problems
    if rec["lang"] not in LANGS:
        problems.append(f"{where}: lang {rec['lang']!r} not in {sorted(LANGS)}")
    if lang_of_file and rec["lang"] != lang_of_file:
        problems.append(f"{where}: lang {rec['lang']!r} differs from the file name's")
    if len(rec["contexts"]) < 2 or not all(isinstance(c, str) and c.strip() for c in rec["contexts"]):
        problems.append(f"{where}: needs >= 2 non-empty context passages")
    kinds = [a.get("kind") for a in rec["answers"] if isinstance(a, dict)]
    if len(kinds) != len(rec["answers"]):
        problems.append(f"{where}: every answer must be an object")
        return problems
    for a in rec["answers"]:
        k, label, text = a.get("kind"), a.get("label"), a.get("text")
        if k not in KINDS:
            problems.append(f"{where}: unknown kind {k!r}")
        want = "good" if k in GOOD_KINDS else "bad"
        if label != want:
            problems.append(f"{where}: kind {k} must have label {want!r}, has {label!r}")
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{where}: {k} has no text")
        if k == "long_correct" and isinstance(text, str) and not length_ok(text, rec["lang"]):
            problems.append(f"{where}: long_correct is too short "
                            f"(>= {LONG_WORDS} words, or {LONG_CJK_CHARS} CJK characters)")
    if len(set(kinds)) != len(kinds):
        problems.append(f"{where}: a kind appears twice")
    if "grounded" not in kinds:
        problems.append(f"{where}: no grounded answer")
    if "off_topic" not in kinds:
        problems.append(f"{where}: no off_topic answer")
    if len(HALLUCINATED_KINDS & set(kinds)) < 3:
        problems.append(f"{where}: needs >= 3 hallucinated kinds")
    if not POOR_KINDS & set(kinds):
        problems.append(f"{where}: needs >= 1 poor kind (evasive, restates_question, partly_relevant)")
    texts = [a["text"].strip() for a in rec["answers"] if isinstance(a.get("text"), str)]
    if len(set(texts)) != len(texts):
        problems.append(f"{where}: two answers have the same text")
    return problems


def check_file(path: str, seen_ids: set[str]) -> list[str]:
    problems = []
    base = os.path.basename(path)
    m = re.match(r"^[a-z]+-([a-z]{2})\.jsonl$", base)
    lang = m.group(1) if m else None
    if not m:
        problems.append(f"{path}: file name must be <domain>-<lang>.jsonl")
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{base}:{n}"
            try:
                rec = json.loads(line)
            except ValueError as exc:
                problems.append(f"{where}: not JSON ({exc})")
                continue
            problems += check_record(rec, where, lang)
            rid = rec.get("id")
            if rid in seen_ids:
                problems.append(f"{where}: duplicate id {rid!r}")
            seen_ids.add(rid)
    return problems


def main(argv: list[str]) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    files = argv or sorted(glob.glob(os.path.join(here, "sources", "*.jsonl")))
    problems: list[str] = []
    seen: set[str] = set()
    for path in files:
        problems += check_file(path, seen)
    for p in problems:
        print(p)
    print(f"{len(files)} files, {len(seen)} questions, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
