"""A round of tools: the tool uses one response asked for, run, and what that came to.

The loop (`loop.py`) hands each response's tool uses here and applies the
`Round` it gets back: the results to answer the uses with, how long the tools
took, or, when some of the uses need a person's yes, the resume record the
turn waits with (the others run first, `waiting()`, approvals.py). `ToolRunner.ran()` runs
uses concurrently within the round's timeout. A turn resumed in a new job
first answers the uses its last response left (`resumed()`): the approved ones
(and, after a crash, the idempotent ones) run now, the others are answered from
the record. Nothing here changes the turn: the loop does, with what it gets.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar, cast

from .. import credentials
from ..cards import Card
from ..credentials import hide_secrets, redact_text
from ..store.records import ResumeRecord
from ..tools import Toolset
from ..wire import ToolResult, ToolUse
from .approvals import Resume, waiting_record
from .clock import TurnClock
from .events import Emitter

T = TypeVar("T")


@dataclass(slots=True)
class Round:
    """What a round of tools came to, for the loop to apply.

    A value: nobody changes one once built. Not frozen only because one is built per
    round and a frozen dataclass's `__init__` costs several times more (as `Checkpoint`)."""

    results: tuple[ToolResult, ...] = ()
    """The results to answer the uses with, in order (none when the turn waits)."""
    seconds: float | None = None
    """How long the tools that ran took (None: the round timed nothing)."""
    waits: ResumeRecord | None = None
    """The resume record of a turn that stops to wait for a person's yes."""


@dataclass(slots=True)
class ToolRunner:
    """What runs a turn's tools: its toolset, its clock, and where a tool's failure is
    reported (the loop's `report`, with the turn's ids and usage)."""

    toolset: Toolset
    clock: TurnClock
    report: Callable[..., None]
    events: Emitter
    """The turn's events: a tool's start is written as it starts, its end with the
    turn's next write."""

    async def ran(self, uses: Sequence[ToolUse], timeout: float) -> Round:
        """Run the uses concurrently within `timeout`: their results, in order, and how long
        they took. A tool still running when the timeout fires is answered with an error
        result; the others keep theirs."""
        self.events.tools_started(uses)
        if (writing := self.events.write_now()) is not None:
            await writing  # a reader sees the tools run while they run
        started = self.clock.now()
        results: list[ToolResult | None] = [None] * len(uses)
        scope: asyncio.Timeout | None = None
        try:
            if len(uses) == 1:  # the common round: no task, no closure, and a timer only
                # for a tool that waits (one that never does, the timer could never stop)
                when = asyncio.get_running_loop().time() + timeout
                step = FirstStep(self.run_tool(uses[0], timeout))
                if step.done:
                    results[0] = step.result
                else:
                    async with (scope := asyncio.timeout_at(when)):
                        results[0] = await step
            else:
                async with (scope := asyncio.timeout(timeout)):
                    await asyncio.gather(
                        *(self._into(results, i, u, timeout) for i, u in enumerate(uses))
                    )
        except TimeoutError:
            if scope is None or not scope.expired():
                raise
        took = self.clock.now() - started
        if len(results) == 1 and results[0] is not None:  # the common round, answered
            answered: tuple[ToolResult, ...] = (results[0],)
        else:
            answered = tuple(
                [
                    r or ToolResult(u.id, f"{u.name} did not finish within {timeout:.1f} s", True)
                    for u, r in zip(uses, results, strict=True)
                ]
            )
        self.events.tools_ended(answered)
        return Round(answered, took)

    async def _into(
        self, results: list[ToolResult | None], i: int, use: ToolUse, timeout: float
    ) -> None:
        """Run one of a round's uses, its result put in its place (kept if the round times out)."""
        results[i] = await self.run_tool(use, timeout)

    async def run_tool(self, use: ToolUse, timeout: float) -> ToolResult:
        """One tool use's result; a tool that raised is reported and answered as an error."""
        try:
            result = await self.toolset.call(use, timeout)
            return secrets_hidden(result) if credentials.kept_any else result
        except Exception as e:
            raised = redact_text(f"{type(e).__name__}: {e}")  # stored, and sent to the model
            self.report(
                "tool_error",
                f"tool {use.name} raised {raised}",
                logging.WARNING,
                details={"tool": use.name, "exception": type(e).__name__},
            )
            return ToolResult(use.id, f"{use.name} failed: {raised}", True)


class FirstStep(Generic[T]):
    """A coroutine run, in the caller's task, up to its first wait (a tool that never waits
    is done there, and its round arms no timer); awaited, it goes on from that wait exactly
    as `await` would have gone on (what the task sends or throws in, passed through)."""

    __slots__ = ("coro", "done", "result", "waits")

    def __init__(self, coro: Coroutine[Any, Any, T]) -> None:
        self.coro = coro
        self.done = False
        try:
            self.waits = coro.send(None)
        except StopIteration as ended:
            self.done, self.result = True, ended.value

    def __await__(self) -> Generator[Any, Any, T]:
        assert not self.done, "a coroutine that finished has nothing to go on with"
        coro, waits = self.coro, self.waits
        while True:
            try:
                sent = yield waits
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as thrown:  # a cancel, thrown in by the task
                try:
                    waits = coro.throw(thrown)
                except StopIteration as ended:
                    return cast(T, ended.value)
            else:
                try:
                    waits = coro.send(sent)
                except StopIteration as ended:
                    return cast(T, ended.value)


def secrets_hidden(result: ToolResult) -> ToolResult:
    """The result with the process's kept secrets replaced in its content and card, before
    the model, the store or a reader sees it (docs/design.md §10); nothing else changes."""
    content = hide_secrets(result.content)
    card = result.card
    if card is not None:
        shown = card.to_json()
        if hide_secrets(shown) is not shown:
            card = Card.from_json(hide_secrets(shown))
    if content is result.content and card is result.card:
        return result
    return replace(result, content=content, card=card)


async def waiting(
    tools: ToolRunner,
    resume: Resume,
    uses: Sequence[ToolUse],
    timeout: float,
    activities: Mapping[str, str],
) -> Round:
    """The round of `uses` when some need a person's yes (`resume.gated`): run the others
    and come to the resume record the turn waits with."""
    ran = await tools.ran(resume.ungated(uses), timeout)
    worked = resume.working + tools.clock.now() - tools.clock.started
    return Round(seconds=ran.seconds, waits=waiting_record(uses, ran.results, activities, worked))


async def resumed(tools: ToolRunner, resume: Resume, timeout: float | None) -> Round:
    """The round a resumed turn starts with: the results of the uses its last response
    left (approved ones and, after a crash, idempotent ones run now, within `timeout`)."""
    run = resume.to_run()
    ran = await tools.ran(run, timeout or 0.001) if run else Round()
    return Round(tuple(resume.results(ran.results)))
