"""B-store. Concurrent turns through the embedded queue and the SQLite store.

SLOT: needs the store and the queue (issue 5). When they land, run B's batch
through the embedded queue with the SQLite store (publish and checkpoint every
iteration) and report iterations per second per process.
"""

from __future__ import annotations

from ..report import Context, Headline, Section

TITLE = "B-store. Concurrent turns through the queue and SQLite"
WHY = "pending: the store and queue are not on this branch"


def run(ctx: Context) -> Section:
    head = Headline("B-store", "iterations per second, one process", "≥ 5,000", "", WHY)
    return Section(TITLE, WHY + ".", [head])
