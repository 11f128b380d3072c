"""{placeholder} filling for prompt and request templates."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable, Mapping


@lru_cache(maxsize=64)
def _placeholder_pattern(names: frozenset[str]) -> re.Pattern:
    return re.compile(r"\{(" + "|".join(sorted(map(re.escape, names))) + r")\}")


def fill_placeholders(template: str, values: Mapping[str, str],
                      known: Iterable[str] | None = None) -> str:
    """Replace each {name} by values[name] in one pass, so a value that itself
    contains "{question}" stays literal; other braces (JSON in a prompt) are left
    alone. A name in `known` without a value is an error."""
    pattern = _placeholder_pattern(frozenset(values if known is None else known))

    def sub(m: re.Match) -> str:
        if m.group(1) not in values:
            raise KeyError(f"template placeholder {{{m.group(1)}}} has no value here")
        return values[m.group(1)]
    return pattern.sub(sub, template)
