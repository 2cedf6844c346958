"""C. History growth: one long turn with big tool results; is a late step dearer?"""

from __future__ import annotations

import gc
import itertools
import statistics
from typing import Any

from .. import fake
from ..contenders import label
from ..method import alternate, median, spread
from ..report import Context, Headline, Section, number, table, verdict
from ..worker import Worker

TITLE = "C. History growth (no store)"
BASE = "bare"
OURS = "turnkeeper"
PEERS = ["pydantic-ai", "openai-agents", "langgraph"]
TARGET = 1.3
WINDOW = 10


async def steps(worker: Worker, spec: dict[str, Any], turns: int) -> dict[str, Any]:
    """`turns` whole turns; per iteration, the median over turns of the time between model calls."""
    shape = fake.Spec(**spec)
    turn = await worker.turn(shape)
    per_turn = []
    for _ in range(turns):
        gc.collect()
        fake.stamps = []
        await turn()
        stamps, fake.stamps = fake.stamps, None
        per_turn.append([b - a for a, b in itertools.pairwise(stamps)])
    return {"us": [statistics.median(x) * 1e6 for x in zip(*per_turn, strict=True)]}


def first(answer: dict[str, Any]) -> float:
    """The typical iteration of the first `WINDOW`: their median, so that one stall that
    has nothing to do with the history's length (a WAL checkpoint's fsync, a full
    collection) does not decide which window looks dearer."""
    us: list[float] = answer["us"]
    return statistics.median(us[:WINDOW])


def last(answer: dict[str, Any]) -> float:
    us: list[float] = answer["us"]
    return statistics.median(us[-WINDOW:])


def growth(answer: dict[str, Any]) -> float:
    return last(answer) / first(answer)


HEADERS = [
    "contender",
    "µs / iteration, first 10 (median)",
    "µs / iteration, last 10 (median)",
    "last ÷ first (median of per-round ratios)",
    "IQR",
]


def run(ctx: Context) -> Section:
    n = ctx.size(200, 20)
    spec = {"rounds": n, "payload": 2048, "delay": 0.0}
    names = [BASE, OURS] + ([] if ctx.smoke else PEERS)
    rounds = ctx.size(7, 1)
    pool = ctx.workers(names)
    pending = {k: p.pending for k, p in pool.items() if p.pending}
    ctx.log(f"{rounds} rounds of one {n}-iteration turn per contender")
    result = alternate(pool, f"{__name__}:steps", rounds, 600.0, ctx.log, spec=spec, turns=1)
    rows = []
    for name in [BASE, OURS, *PEERS]:
        if name not in names:
            rows.append([label(name), "not run in the smoke run", "", "", ""])
        elif name in pending:
            rows.append([label(name), pending[name], "", "", ""])
            continue
        ratios = result.values(name, growth)
        rows.append(
            [
                label(name),
                number(median(result.values(name, first))),
                number(median(result.values(name, last))),
                f"{number(median(ratios))}×",
                spread(ratios),
            ]
        )
    ours = median(result.values(OURS, growth))
    head = Headline(
        "C, no store",
        f"µs / iteration at {n - 9}–{n} ÷ at 1–10",
        "≤ 1.3×",
        f"{number(ours)}×",
        verdict(ours <= TARGET),
    )
    body = DESCRIPTION.format(n=n) + f"\n{rounds} rounds\n\n" + table(HEADERS, rows) + "\n"
    return Section(TITLE, body, [head])


DESCRIPTION = """\
One turn of {n} tool round trips against the instant fake model; every tool
result is 2,048 characters, so the history ends near {n} × 2 KB. The fake
model notes the time at every call; an iteration is the time from one model
call to the next (the loop's bookkeeping, the tool, the append, the next
request). The ratio is the median of the last 10 iterations over the median
of the first 10 (a median, so that one stall unrelated to the history, such
as a WAL checkpoint through a store, does not decide it), one turn per
contender per round, contenders alternating; it
does not depend on the machine's speed, only on how the cost of a step grows
with the history. turnkeeper runs as in A (`LocalHooks`, no store).
"""
