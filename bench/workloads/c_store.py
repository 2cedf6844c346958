"""C-store. History growth through the store (SQLite, PostgreSQL).

SLOT: needs the store (issue 5). When it lands, run `c_history.steps` with a
contender whose hooks are the store's (checkpoint and publish every
iteration), one per backend, and compare the last 10 iterations to the first
10 as `c_history.run` does.
"""

from __future__ import annotations

from ..report import Context, Headline, Section

TITLE = "C. History growth through the store"
WHY = "pending: the store is not on this branch"


def run(ctx: Context) -> Section:
    heads = [
        Headline(f"C, {db}", "µs / iteration at 191–200 ÷ at 1–10", "≤ 1.3×", "", WHY)
        for db in ("SQLite", "PostgreSQL")
    ]
    return Section(TITLE, WHY + ".", heads)
