"""The two databases share one store: what is SQLite's and what is PostgreSQL's is not the
same code written twice.

Every function (methods and nested ones included) of the SQLite-specific modules is
compared with each function of the same name in the PostgreSQL-specific ones, after
their placeholders and booleans are written alike; a pair whose `difflib` ratio is
0.6 or more is alike. A few may be (a dialect's driver calls have the same shape);
a store call written twice would be many.
"""

from __future__ import annotations

import ast
import difflib
import re
from pathlib import Path

STORE = Path(__file__).resolve().parents[2] / "src" / "turnkeeper" / "store"
SQLITE = ("sqlite.py", "group_commit.py", "data_version.py")
POSTGRES = ("postgres.py", "pooled.py", "pool.py", "listener.py")
ALIKE = 0.6
MOST_ALIKE = 3


def normalised(source: str) -> str:
    """`source` with PostgreSQL's placeholders and booleans written as SQLite's."""
    source = source.replace("%s", "?")
    source = re.sub(r"\bNOT (\w+)", r"\1 = 0", source)
    source = re.sub(r"\btrue\b", "1", source)
    return re.sub(r"\bfalse\b", "0", source)


def functions(names: tuple[str, ...]) -> dict[str, list[str]]:
    """Each function name in the modules, with the normalised source of each definition."""
    found: dict[str, list[str]] = {}
    for name in names:
        text = (STORE / name).read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                source = ast.get_source_segment(text, node) or ""
                found.setdefault(node.name, []).append(normalised(source))
    return found


def alike(first: tuple[str, ...], second: tuple[str, ...]) -> dict[str, float]:
    """The names defined on both sides whose closest pair is alike, with its ratio."""
    ones, others = functions(first), functions(second)
    ratios = {
        name: max(
            difflib.SequenceMatcher(None, a, b).ratio() for a in ones[name] for b in others[name]
        )
        for name in ones.keys() & others.keys()
    }
    return {name: round(r, 2) for name, r in sorted(ratios.items()) if r >= ALIKE}


def test_the_sqlite_and_postgresql_modules_share_few_alike_functions() -> None:
    found = alike(SQLITE, POSTGRES)
    assert len(found) <= MOST_ALIKE, found


def test_the_check_finds_a_function_written_twice() -> None:
    twice = "def claim(db):\n    return db.execute('UPDATE turns SET done = 0 WHERE x = ?')\n"
    again = twice.replace("?", "%s").replace("done = 0", "NOT done")
    assert normalised(again) == normalised(twice)
    assert difflib.SequenceMatcher(None, normalised(twice), normalised(again)).ratio() == 1.0
