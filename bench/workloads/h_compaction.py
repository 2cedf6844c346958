"""Compaction. A 200-turn conversation against a fake API with a 20,000-token window.

Each contender runs the conversation (`window_turn`) in a worker process of its
own, over HTTP to a fresh `window_api.WindowApi` in this process, which refuses
a request longer than the window as the real APIs do and bills every answered
request's tokens to the turn it was made in. turnkeeper runs every turn and is
measured by the turns it finished and by whether the input billed per turn
stays flat once the window is full; each peer, with its defaults, runs until
its first failure. Tokens are counted, not timed: one run is the measure.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from ..contenders import label
from ..report import Context, Headline, Section, table, verdict
from ..window_api import WindowApi
from ..worker import Worker

TITLE = "Compaction. A 200-turn conversation with ~2 KB tool results in a 20,000-token window"
FLAT = 1.3
OURS = "turnkeeper-window"
PEERS = ("pydantic-ai-window", "openai-agents-window", "langgraph-window")
NAMES = {PEERS[0]: "pydantic-ai", PEERS[1]: "openai-agents", PEERS[2]: "langgraph"}


@dataclass(frozen=True)
class Size:
    """The run's size: turns, the fake's window, the turns after the window fills that the
    last turns are compared with (first and last, from 1), and how many last turns."""

    turns: int
    window: int
    early: tuple[int, int]
    late: int


FULL = Size(200, 20_000, (40, 90), 50)
SMOKE = Size(16, 4_000, (6, 10), 4)


async def conversation(worker: Worker, base_url: str, turns: int) -> dict[str, Any]:
    """The worker's side: the contender's conversation against the fake at `base_url`."""
    answer: dict[str, Any] = await worker.contender.conversation(base_url, turns)
    return answer


@dataclass
class Measured:
    """One contender's run: what its worker answered and what the fake billed and refused."""

    finished: int
    failure: str | None
    billed: list[int]
    """The input tokens billed in each turn, from turn 1."""
    refused: int
    summaries: int
    largest: int

    def median(self, first: int, last: int) -> float:
        """The median input billed per turn over turns `first` to `last` that were billed."""
        billed = [b for b in self.billed[first - 1 : last] if b]
        return statistics.median(billed) if billed else float("nan")

    def ratio(self, size: Size) -> float:
        late = self.median(size.turns - size.late + 1, size.turns)
        return late / self.median(*size.early)


def measure(ctx: Context, contender: str, size: Size) -> Measured | str:
    """The contender's run against a fresh fake, or why it cannot run."""
    process = ctx.workers([contender])[contender]
    if process.pending:
        return f"pending: {process.pending}"
    with WindowApi(size.window) as api:
        answer = process.request(
            f"{__name__}:conversation", 900, base_url=api.url, turns=size.turns
        )
    if "error" in answer:
        return f"failed: {answer['error']}"
    largest = max((b.tokens for b in api.bills), default=0)
    billed = api.per_turn(size.turns)
    summaries = sum(1 for b in api.bills if b.turn is None)
    refused = len(api.refusals)
    return Measured(answer["finished"], answer["failure"], billed, refused, summaries, largest)


HEADERS = [
    "contender",
    "turns finished",
    "first failure",
    "input billed per turn: median of turns {a}–{b}",
    "median of the last {n}",
    "last ÷ {a}–{b}",
    "requests refused",
    "summary calls",
    "largest request answered (tokens)",
]


def row(contender: str, measured: Measured | str, size: Size) -> list[str]:
    if isinstance(measured, str):
        return [label(contender), measured, "", "", "", "", "", "", ""]
    early = measured.median(*size.early)
    late = measured.median(size.turns - size.late + 1, size.turns)
    ran_late = measured.finished >= size.turns - size.late + 1
    return [
        label(contender),
        f"{measured.finished} of {size.turns}",
        (measured.failure or "none").replace("|", "/").replace("\n", " "),
        f"{early:,.0f}" if early == early else "–",
        f"{late:,.0f}" if ran_late else "–",
        f"{late / early:.2f}" if ran_late and early == early else "–",
        str(measured.refused),
        str(measured.summaries),
        f"{measured.largest:,}",
    ]


def headlines(size: Size, results: dict[str, Measured | str]) -> list[Headline]:
    where = f"Compaction, {size.turns} turns, {size.window:,}-token window"
    a, b = size.early
    flat = f"input billed per turn, median of the last {size.late} ÷ of turns {a}–{b}"
    ours = results[OURS]
    if isinstance(ours, str):
        return [
            Headline(where, "turnkeeper's turns finished", f"{size.turns}", "", ours),
            Headline(where, flat, f"≤ {FLAT}", "", ours),
            peers(where, results),
        ]
    ratio = ours.ratio(size)
    done = ours.finished == size.turns
    return [
        Headline(
            where, "turnkeeper's turns finished", f"{size.turns} of {size.turns}",
            f"{ours.finished} of {size.turns}", verdict(done),
        ),
        Headline(where, flat, f"≤ {FLAT}", f"{ratio:.2f}", verdict(ratio <= FLAT)),
        peers(where, results),
    ]  # fmt: skip


def peers(where: str, results: dict[str, Measured | str]) -> Headline:
    measure = "turns finished before the first failure: " + "; ".join(NAMES[p] for p in PEERS)
    found = [results[p] for p in PEERS]
    shown = "; ".join(m if isinstance(m, str) else str(m.finished) for m in found)
    return Headline(where, measure, "for comparison", shown, "–")


def run(ctx: Context) -> Section:
    size = SMOKE if ctx.smoke else FULL
    results: dict[str, Measured | str] = {}
    for contender in (OURS, *PEERS):
        ctx.log(f"  {contender}")
        results[contender] = measure(ctx, contender, size)
    a, b = size.early
    headers = [h.format(a=a, b=b, n=size.late) for h in HEADERS]
    body = [
        DESCRIPTION,
        f"**{size.turns} turns, a {size.window:,}-token window**\n",
        table(headers, [row(c, m, size) for c, m in results.items()]) + "\n",
    ]
    return Section(TITLE, "\n".join(body), headlines(size, results))


DESCRIPTION = """\
Every contender holds one conversation over HTTP with a fake model API in the
bench's process (`bench/window_api.py`), fresh for each row, with no delay:
Anthropic's Messages wire for turnkeeper and pydantic-ai, the OpenAI-compatible
chat completions wire for openai-agents and langgraph. It counts a request's
messages, system prompt and tools as JSON characters ÷ 4 tokens, refuses one
over the window as the APIs do (400 `invalid_request_error` "prompt is too
long: N tokens > 20000 maximum"; `context_length_exceeded`), and bills an
answered one's tokens as input to the turn it was made in (a summary's call to
the turn it was made for). Turn N (`bench/window_turn.py`) asks for the day's
notes; the model calls the one tool, whose result is ~2,000 characters, and
answers in a line: ~600 tokens of history per turn. Each contender runs with
its defaults: turnkeeper as a served assistant runs a turn (`TurnJob`, SQLite,
`Compaction()`), every turn whatever the one before ended with; each peer the
way its documentation carries a conversation on, until its first failure.
"""
