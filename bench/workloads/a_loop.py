"""A. Loop overhead: one turn of N tool round trips against the instant fake model, no store."""

from __future__ import annotations

import gc
import time
from typing import Any

from .. import fake
from ..contenders import label
from ..method import Rounds, alternate, median, spread
from ..report import Context, Headline, Section, number, table, verdict
from ..worker import Worker

TITLE = "A. Loop overhead"
BASE = "bare"
OURS = "turnkeeper"
PEERS = ["pydantic-ai", "openai-agents", "langgraph"]
SYNC = "turnkeeper-sync"
CONTENDERS = [BASE, OURS, SYNC, "turnkeeper-scripted", *PEERS]
TARGET_US = 60.0
"""Issue 12: A stays at most 60 µs per model call (it was 100 before)."""
TARGET_FASTER = 25.0
TARGET_SYNC = 1.5


async def slice(worker: Worker, spec: dict[str, Any], seconds: float) -> dict[str, Any]:
    """Whole turns, back to back, for at least `seconds`: CPU and wall time per model call."""
    shape = fake.Spec(**spec)
    turn = await worker.turn(shape)
    gc.collect()
    turns = 0
    wall, cpu = time.perf_counter(), time.process_time()
    while True:
        await turn()
        turns += 1
        if time.perf_counter() - wall >= seconds:
            break
    calls = turns * shape.calls
    return {
        "calls": calls,
        "wall_us": (time.perf_counter() - wall) / calls * 1e6,
        "cpu_us": (time.process_time() - cpu) / calls * 1e6,
    }


def cpu(answer: dict[str, Any]) -> float:
    return float(answer["cpu_us"])


def wall(answer: dict[str, Any]) -> float:
    return float(answer["wall_us"])


def measure(
    ctx: Context, names: list[str], spec: fake.Spec, rounds: int, seconds: float
) -> tuple[Rounds, dict[str, str]]:
    """Alternating rounds of slices; the pending contenders with why."""
    pool = ctx.workers(names)
    pending = {n: p.pending for n, p in pool.items() if p.pending}
    ctx.log(f"N = {spec.rounds}: {rounds} rounds of {seconds} s slices")
    result = alternate(
        pool, f"{__name__}:slice", rounds, 600.0, ctx.log, spec=spec_args(spec), seconds=seconds
    )
    return result, pending


def spec_args(spec: fake.Spec) -> dict[str, Any]:
    return {"rounds": spec.rounds, "payload": spec.payload, "delay": spec.delay}


def rows(result: Rounds, names: list[str], ours: str, pending: dict[str, str]) -> list[list[str]]:
    """Per contender: median CPU and wall µs per call, ratios to the baseline and to us."""
    out = []
    for name in names:
        if name in pending:
            out.append([label(name), pending[name], "", "", "", ""])
            continue
        to_base = result.ratios(name, BASE, cpu)
        to_ours = result.ratios(name, ours, cpu) if ours in result.names else []
        out.append(
            [
                label(name),
                number(median(result.values(name, cpu))),
                number(median(result.values(name, wall))),
                number(median(to_base)),
                spread(to_base),
                number(median(to_ours)),
            ]
        )
    return out


HEADERS = [
    "contender",
    "CPU µs / model call (median)",
    "wall µs / model call (median)",
    "× bare loop (median of per-round ratios)",
    "IQR of that ratio",
    "× turnkeeper",
]


def headlines(n: int, result: Rounds) -> list[Headline]:
    ours = median(result.values(OURS, cpu))
    out = [
        Headline(
            f"A, N = {n}",
            "CPU µs per model call",
            f"≤ {TARGET_US:g} µs",
            number(ours),
            verdict(ours <= TARGET_US),
        )
    ]
    sync = median(result.ratios(SYNC, OURS, cpu))
    out.append(
        Headline(
            f"A, N = {n}",
            "sync tool ÷ async tool",
            f"≤ {TARGET_SYNC}×",
            f"{number(sync)}×",
            verdict(sync <= TARGET_SYNC),
        )
    )
    for peer in PEERS:
        if peer not in result.names:
            out.append(
                Headline(
                    f"A, N = {n}", f"{peer} ÷ turnkeeper", "≥ 25×", "", "pending: not installed"
                )
            )
            continue
        times = median(result.ratios(peer, OURS, cpu))
        out.append(
            Headline(
                f"A, N = {n}",
                f"{peer} ÷ turnkeeper",
                "≥ 25×",
                f"{number(times)}×",
                verdict(times >= TARGET_FASTER),
            )
        )
    return out


def run(ctx: Context) -> Section:
    rounds = ctx.size(15, 2)
    seconds = 0.02 if ctx.smoke else 0.25
    parts, heads = [], []
    for n in (2,) if ctx.smoke else (10, 50):
        result, pending = measure(ctx, CONTENDERS, fake.Spec(rounds=n), rounds, seconds)
        parts.append(
            f"**N = {n}** tool round trips ({n + 1} model calls per turn), {rounds} rounds\n"
        )
        parts.append(table(HEADERS, rows(result, CONTENDERS, OURS, pending)) + "\n")
        heads += headlines(n, result)
    return Section(TITLE, DESCRIPTION + "\n" + "\n".join(parts), heads)


DESCRIPTION = """\
One turn = N responses that each ask for one `lookup` tool use, then an
`end_turn` answer; the model answers instantly and the tool returns 16
characters. A slice runs whole turns back to back for at least 0.25 s in the
contender's own worker process (after one untimed warm-up turn and a
`gc.collect()`); costs are per model call (N + 1 per turn). turnkeeper runs
`run_turn` with a fake provider that parses the same Messages API bodies with
`messages_api.parse_reply` (what the SDK adapter does after its HTTP call),
`FunctionToolset` and `LocalHooks` with a no-op reporter; the "sync tool" row
is the same with the tool written as a plain function (each call handed to a
worker thread and back, `tools/threads.py`); the `ScriptedProvider` row is
the same with the shipped scripted model (which copies the history on every
call, for tests). pydantic-ai runs `Agent.run`
with a `FunctionModel`, openai-agents `Runner.run` with a fake `Model`
(tracing disabled), langgraph `create_react_agent` with a fake chat model that
emits tool calls; each is built once, like an application does, and finds its
step from the length of the history it is sent.
"""
