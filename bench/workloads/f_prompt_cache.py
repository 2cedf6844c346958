"""Prompt cache. A ten-iteration turn's billed input ÷ the same turn uncached.

Each variant runs the workload's two turns (`cache_turn`) in a worker process
of its contender, through the official Anthropic SDK over HTTP to a fresh
`cache_api.CacheApi` in this process, which bills every request as the
provider documents it. Billed input is counted in input-token equivalents
(writes 1.25×, one-hour writes 2×, reads 0.1×) and divided by the same
requests' tokens billed as plain input. Tokens are counted, not timed: one run
of each variant is the measure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import cache_turn
from ..cache_api import Bill, CacheApi
from ..contenders import label
from ..report import Context, Headline, Section, table, verdict
from ..worker import Worker

TITLE = "Prompt cache. Billed input of a ten-iteration turn, ÷ the same turn uncached"
TARGET = 0.25
OURS = ("turnkeeper-cache", "default")
PEERS = (("pydantic-ai-anthropic", "default"), ("pydantic-ai-anthropic", "cache"))
VARIANTS = {
    OURS: "defaults (`prompt_cache=True`: 5 minutes)",
    ("turnkeeper-cache", "1h"): '`prompt_cache="1h"`',
    ("turnkeeper-cache", "off"): "`prompt_cache=False`",
    PEERS[0]: "defaults",
    PEERS[1]: "`anthropic_cache`, `_instructions`, `_tool_definitions` on",
}


async def turns(worker: Worker, base_url: str, variant: str, iterations: int) -> dict[str, Any]:
    """The worker's side: the contender's two turns against the fake at `base_url`."""
    answer: dict[str, Any] = await worker.contender.turns(base_url, variant, iterations)
    return answer


@dataclass
class Measured:
    """One variant's bills, split by turn, and what its worker answered."""

    turns: list[list[Bill]]
    answer: dict[str, Any]

    def ratio(self, turn: int) -> float:
        bills = self.turns[turn]
        return sum(b.equivalents() for b in bills) / max(1, sum(b.total for b in bills))


def measure(ctx: Context, contender: str, variant: str, iterations: int) -> Measured | str:
    """The variant's run against a fresh fake, or why it cannot run."""
    process = ctx.workers([contender])[contender]
    if process.pending:
        return f"pending: {process.pending}"
    with CacheApi(iterations, cache_turn.TOOL) as api:
        answer = process.request(
            f"{__name__}:turns", 300, base_url=api.url, variant=variant, iterations=iterations
        )
    first = answer["calls"][0]
    return Measured([api.bills[:first], api.bills[first:]], answer)


HEADERS = [
    "contender",
    "turn 1 ÷ uncached",
    "turn 2 ÷ uncached",
    "model calls",
    "prefix tokens",
    "turn 1: input / cache write / cache read tokens",
    "most breakpoints",
]


def row(key: tuple[str, str], measured: Measured | str) -> list[str]:
    name = f"{label(key[0])}, {VARIANTS[key]}"
    if isinstance(measured, str):
        return [name, measured, "", "", "", "", ""]
    one = measured.turns[0]
    written = sum(sum(b.written.values()) for b in one)
    kinds = f"{sum(b.input for b in one):,} / {written:,} / {sum(b.read for b in one):,}"
    return [
        name,
        f"{measured.ratio(0):.3f}",
        f"{measured.ratio(1):.3f}" if measured.turns[1] else "–",
        " + ".join(str(len(t)) for t in measured.turns),
        f"{one[0].total:,}" if one else "–",
        kinds,
        str(max((b.breakpoints for t in measured.turns for b in t), default=0)),
    ]


def published(measured: Measured | str) -> str:
    """Whether turnkeeper's published usage of each turn is what the fake billed."""
    if isinstance(measured, str):
        return measured
    billed = [
        [sum(b.input for b in t), sum(sum(b.written.values()) for b in t), sum(b.read for b in t)]
        for t in measured.turns
    ]
    kinds = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    shown = [[u[k] for k in kinds] for u in measured.answer["usage"]]
    return "the same" if shown == billed else f"**different**: {shown} against {billed}"


def headline(iterations: int, results: dict[tuple[str, str], Measured | str]) -> Headline:
    where = f"Prompt cache, {iterations} iterations"
    measure = "billed input ÷ uncached: turnkeeper defaults (pydantic-ai defaults; caching on)"
    ours = results[OURS]
    if isinstance(ours, str):
        return Headline(where, measure, f"≤ {TARGET}", "", ours)
    peers = [p if isinstance(p, str) else f"{p.ratio(0):.3f}" for p in (results[k] for k in PEERS)]
    result = f"{ours.ratio(0):.3f} ({'; '.join(str(p) for p in peers)})"
    return Headline(where, measure, f"≤ {TARGET}", result, verdict(ours.ratio(0) <= TARGET))


def run(ctx: Context) -> Section:
    iterations = ctx.size(10, 3)
    results: dict[tuple[str, str], Measured | str] = {}
    for key in VARIANTS:
        ctx.log(f"  {key[0]} {key[1]}")
        results[key] = measure(ctx, *key, iterations)
    body = [
        DESCRIPTION,
        f"**{iterations} model calls per turn**, two turns in one conversation\n",
        table(HEADERS, [row(key, m) for key, m in results.items()]) + "\n",
        f"turnkeeper's published usage of each turn against the fake's bills: "
        f"{published(results[OURS])}.\n",
    ]
    return Section(TITLE, "\n".join(body), [headline(iterations, results)])


DESCRIPTION = """\
Every contender sends the same turns through the official Anthropic SDK over
HTTP to a fake Messages API in the bench's process (`bench/cache_api.py`),
fresh for each row, which bills as the prompt caching guide documents: a read
for the longest live prefix written before that the request repeats (at a
breakpoint or up to 20 blocks before one), a write for the rest up to the last
breakpoint, plain input after it, entries living 5 minutes (or an hour) from
their last use, at most 4 breakpoints, no entry under 1,024 tokens. The turn
(`bench/cache_turn.py`): instructions and eight tool definitions of ~6,000
tokens, every call but the last reads a page, adding ~400 tokens; the second
turn asks again in the same conversation. Tokens are a block's JSON in
characters ÷ 4 for everybody. "÷ uncached" is the turn's billed input in
input-token equivalents (write 1.25×, one-hour write 2×, read 0.1×) divided by
the same requests' tokens at the input price.
"""
