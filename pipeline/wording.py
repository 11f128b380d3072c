"""How the command line and the Python API word a count, one way everywhere."""
from __future__ import annotations


def counted(n: int, noun: str) -> str:
    """'1 row', '2 rows', '0 rows' (lines said '1 rows in errors/', '1 bot errors')."""
    return f"{n} {noun}{'s' * (n != 1)}"
