"""A round of tools: the tool uses one response asked for, run for the loop's turn.

The loop (`loop.py`) hands each response's tool uses here: `ran()` runs them
concurrently within the round's timeout. Before they run, `waits()` decides
whether the turn stops to wait for a person's yes (a tool with `needs_approval`:
the others run first, and the turn parks with its resume record, approvals.py),
and writes a checkpoint first when a crash is to lose no response
(`resume_after_crash`). A turn resumed in a new job first answers, with
`answer_resumed()`, the uses its last response left: the approved ones (and,
after a crash, the idempotent ones) run now, the others are answered from the
record.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ..budget import Budget
from ..credentials import redact_text
from ..store.records import ResumeRecord
from ..tools import Toolset
from ..wire import ToolResult, ToolUse
from . import events
from .approvals import Resume, parked
from .events import Emitter
from .model_call import CallRoom


class Turn(Protocol):
    """What a round of tools uses of the loop's turn (`loop._Turn`)."""

    toolset: Toolset
    budget: Budget
    room: CallRoom
    events: Emitter
    activities: Mapping[str, str]
    resume: Resume
    paused: ResumeRecord | None
    activity: str | None
    deadline: float

    def answer(self, results: Sequence[ToolResult]) -> None: ...

    def report(self, event: str, message: str, level: int, **about: Any) -> None: ...

    async def iteration_done(self) -> None: ...


async def ran(turn: Turn, uses: Sequence[ToolUse], timeout: float) -> list[ToolResult]:
    """Run the tool uses concurrently within `timeout`; their results, in order. A tool
    still running when the timeout fires is answered with an error result; the others
    keep theirs."""
    turn.events.pending.extend(events.tools_started(uses))
    await turn.events.write_now()  # a reader sees the tools run while they run
    started = turn.room.now()
    results: list[ToolResult | None] = [None] * len(uses)

    async def run(i: int, use: ToolUse) -> None:
        results[i] = await run_tool(turn, use, timeout)

    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            if len(uses) == 1:
                await run(0, uses[0])
            else:
                await asyncio.gather(*(run(i, u) for i, u in enumerate(uses)))
    except TimeoutError:
        if not scope.expired():
            raise
    turn.room.tools_took(turn.room.now() - started)
    answered = [
        r or ToolResult(u.id, f"{u.name} did not finish within {timeout:.1f} s", True)
        for u, r in zip(uses, results, strict=True)
    ]
    turn.events.pending.extend(events.tools_ended(answered))
    return answered


async def run_tool(turn: Turn, use: ToolUse, timeout: float) -> ToolResult:
    """One tool use's result; a tool that raised is reported and answered as an error."""
    try:
        return await turn.toolset.call(use, timeout)
    except Exception as e:
        raised = redact_text(f"{type(e).__name__}: {e}")  # stored, and sent to the model
        turn.report(
            "tool_error",
            f"tool {use.name} raised {raised}",
            logging.WARNING,
            details={"tool": use.name, "exception": type(e).__name__},
        )
        return ToolResult(use.id, f"{use.name} failed: {raised}", True)


async def waits(turn: Turn, uses: Sequence[ToolUse], timeout: float) -> bool:
    """Before the tools run: a checkpoint, if a crash is to lose no response; then, if
    some need a person's yes, run the others and stop working (True): the turn waits."""
    gated = turn.resume.gated(uses)
    if gated:
        turn.room.decided("waiting", turn.activity)
    if turn.resume.checkpoint_tools:
        await turn.iteration_done()
    if gated:
        results = await ran(turn, turn.resume.ungated(uses), timeout)
        worked = turn.resume.working + turn.room.now() - turn.room.started
        turn.paused = parked(uses, results, turn.activities, worked)
    return gated


async def answer_resumed(turn: Turn) -> None:
    """A resumed turn first answers the uses its last response left (approved ones and,
    after a crash, idempotent ones run now), unless a stop came; then the next call."""
    if not turn.resume.uses or turn.room.calls:  # answered before this job's first call
        return
    left = turn.budget.timeout_for_tools(turn.deadline - turn.room.now())
    run = turn.resume.to_run()
    turn.answer(turn.resume.results(await ran(turn, run, left or 0.001) if run else []))
    await turn.iteration_done()
