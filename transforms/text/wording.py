"""How evalbeam words a count in what it says (messages, reports, pages), one
way everywhere. It sits in the text package, below the stages and the command
line, so a transform's message words a count as the command line does."""
from __future__ import annotations


def counted(n: int, noun: str) -> str:
    """'1 row', '2 rows', '0 rows', '12,345 rows': the noun agrees with the
    count (lines said '1 rows in errors/', '1 bot errors') and a large count
    reads with thousands separators, as the reports print them."""
    return f"{n:,} {noun}{'s' * (n != 1)}"
