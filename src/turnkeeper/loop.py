"""The turn loop: call the model, run the tools it asks for, append, repeat.

One `while` loop, top to bottom. Stop reasons are control flow (ARCHITECTURE
§3): `decide()` maps each response to *continue* or *exit with an outcome*,
the caps and the cancel flag are checked before every call, and every exit
leaves the loop by `break` so that the single finalisation in `finally` runs
exactly once, whatever happened.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

from .activity import ACTIVITIES, caption
from .budget import Budget, Clock, monotonic
from .errors import ProviderError, ProviderFailed, ProviderUnavailable
from .hooks import Checkpoint, Hooks, LocalHooks
from .i18n import counted
from .outcomes import ERROR_OUTCOMES, OUTCOME_KEYS, Outcome, Status, Stop
from .providers import Provider
from .report import Report
from .tools import NoTools, Toolset
from .usage import Usage
from .wire import Message, Reply, ToolResult, ToolSpec, ToolUse

# How each exit is reported: (level, what the log says). Exits not here are not reported.
REPORTED: dict[Outcome, tuple[int, str]] = {
    Outcome.TRUNCATED: (logging.WARNING, "response truncated on max_tokens"),
    Outcome.REFUSED: (logging.INFO, "the model refused; not retried"),
    Outcome.CONTEXT_EXCEEDED: (logging.ERROR, "the model's context window is full"),
    Outcome.ITERATION_LIMIT: (logging.WARNING, "hit the iteration cap"),
    Outcome.TIME_LIMIT: (logging.WARNING, "hit its wall-clock budget"),
    Outcome.FAILED: (logging.ERROR, "the turn failed"),
}


@dataclass(frozen=True, slots=True)
class Exit:
    outcome: Outcome


CONTINUE = None
"""`decide()` returns this when the turn goes on (tools to run, or a paused turn to re-send)."""


def decide(reply: Reply) -> Exit | None:
    """What a response means for the turn: `CONTINUE`, or the `Exit` it ends with."""
    match reply.stop:
        case Stop.TOOL_USE | Stop.PAUSE_TURN | Stop.COMPACTION:
            return CONTINUE
        case Stop.END_TURN:
            return Exit(Outcome.FINISHED)
        case Stop.MAX_TOKENS:
            return Exit(Outcome.TRUNCATED)
        case Stop.REFUSAL:
            return Exit(Outcome.REFUSED)
        case Stop.CONTEXT_EXCEEDED:
            return Exit(Outcome.CONTEXT_EXCEEDED)
        case Stop.OTHER:
            return Exit(Outcome.FAILED)
        case _ as unreachable:
            assert_never(unreachable)


@dataclass(slots=True)
class TurnResult:
    outcome: Outcome
    state: dict[str, Any]
    """The final published state (`done: true`)."""
    history: list[Message]
    """The whole history, prior messages included, valid to send as the next request."""
    usage: Usage
    trace: dict[str, Any]


async def run_turn(
    question: str,
    *,
    provider: Provider,
    toolset: Toolset | None = None,
    history: Sequence[Message] = (),
    budget: Budget | None = None,
    hooks: Hooks | None = None,
    clock: Clock = monotonic,
    activities: Mapping[str, str] = ACTIVITIES,
    turn_id: str = "t_local",
    conversation_id: str = "c_local",
    version: int = 0,
    message_offset: int = 0,
) -> TurnResult:
    """Run one turn of `question` after `history`; never raises for what the model or tools do.

    `version` is the last version already published for this turn (the first
    publish here is `version + 1`); `message_offset` numbers the published
    messages after those of earlier turns.
    """
    turn = _Turn(
        provider=provider,
        toolset=toolset or NoTools(),
        budget=budget or Budget(),
        hooks=hooks or LocalHooks(),
        clock=clock,
        activities=activities,
        history=list(history),
        turn_id=turn_id,
        state={
            "turn_id": turn_id,
            "conversation_id": conversation_id,
            "version": version,
            "status": Status.RUNNING.value,
            "done": False,
            "stopped": False,
            "has_error": False,
            "activity": None,
            "messages": [],
            "usage": {},
        },
        message_offset=message_offset,
    )
    await turn.run(question)
    return turn.result()


class _Turn:
    """The mutable state of one turn and the steps the loop takes on it."""

    def __init__(
        self,
        *,
        provider: Provider,
        toolset: Toolset,
        budget: Budget,
        hooks: Hooks,
        clock: Clock,
        activities: Mapping[str, str],
        history: list[Message],
        turn_id: str,
        state: dict[str, Any],
        message_offset: int,
    ) -> None:
        self.provider = provider
        self.toolset = toolset
        self.budget = budget
        self.hooks = hooks
        self.activities = activities
        self.history = history
        self.turn_id = turn_id
        self.state = state
        self.message_offset = message_offset
        self.usage = Usage()
        self.outcome: Outcome | None = None
        self.error_key: str | None = None
        self.pending: tuple[ToolUse, ...] = ()
        """Client tool uses appended to the history and not yet answered."""
        self.checkpointed = len(history)
        self.finalised = 0
        self.stop_checks = 0
        self.stopped_at_check: int | None = None
        self.prior = len(history)
        self.question = ""
        self.calls: list[dict[str, Any]] = []
        self.clock_reads: list[float] = []
        self._clock = clock
        self.started = self.now()
        self.deadline = self.started + budget.deadline

    def now(self) -> float:
        t = self._clock()
        self.clock_reads.append(t)
        return t

    # ---- the loop -------------------------------------------------------

    async def run(self, question: str) -> None:  # noqa: C901 (the loop, kept in one piece)
        self.question = question
        # Each call and tool round has its own timeout; this one, in real time, only
        # catches a provider or toolset that ignores the timeout it was given.
        backstop = asyncio.timeout(self.budget.deadline)
        try:
            self.history.append(self.provider.user_message(question))
            self.bubble({"role": "user", "text": question})
            await self.publish()
            async with backstop:
                tools = await self.toolset.list_tools()
                while True:
                    if await self.stop_requested():
                        self.exit(Outcome.STOPPED)
                        break
                    timeout = self.budget.timeout_for_call(self.deadline - self.now())
                    if timeout is None:
                        self.exit(Outcome.TIME_LIMIT, "too little time left to start a model call")
                        break
                    reply = await self.call(tools, timeout)
                    if reply is None:
                        break
                    step = decide(reply)
                    self.append(reply, step)
                    if step is not CONTINUE:
                        self.end(reply, step.outcome)
                        break
                    self.show(reply)
                    if self.usage.iterations >= self.budget.max_iterations:
                        self.exit(Outcome.ITERATION_LIMIT, "the model wanted another step")
                        break
                    if reply.tool_uses:
                        tools_timeout = self.budget.timeout_for_tools(self.deadline - self.now())
                        if tools_timeout is None:
                            self.exit(Outcome.TIME_LIMIT, "no time left to run the tools")
                            break
                        await self.run_tools(reply.tool_uses, tools_timeout)
                    await self.iteration_done()
        except BaseException as e:
            if isinstance(e, TimeoutError) and backstop.expired():
                self.overran()
            else:
                self.crashed(e)
                raise
        finally:
            await self.finalise()

    # ---- before a call --------------------------------------------------

    async def stop_requested(self) -> bool:
        self.stop_checks += 1
        if await self.hooks.should_stop():
            self.stopped_at_check = self.stop_checks
            return True
        return False

    # ---- the model call -------------------------------------------------

    async def call(self, tools: Sequence[ToolSpec], timeout: float) -> Reply | None:
        """One model call; on failure, the turn's exit is set and None returned."""
        started = self.now()
        record: dict[str, Any] = {
            "iteration": self.usage.iterations + 1,
            "started": started - self.started,
            "timeout": timeout,
        }
        self.calls.append(record)
        try:
            reply = await self.provider.complete(self.history, tools, timeout)
        except TimeoutError:
            error: ProviderError = ProviderUnavailable(
                f"the model call did not finish within its {timeout:.1f} s timeout"
            )
        except ProviderError as e:
            error = e
        except Exception as e:
            error = ProviderFailed(f"{type(e).__name__}: {e}")
        else:
            record.update(duration=self.now() - started, response=reply.raw)
            record.update(stop_reason=reply.raw_stop, tools=[u.name for u in reply.tool_uses])
            self.usage.add(reply.usage)
            await self.hooks.record_usage(self.usage)
            return reply
        record.update(duration=self.now() - started, error=error.describe())
        self.exit(Outcome.FAILED, str(error), key=error.key, details=error.describe())
        return None

    def append(self, reply: Reply, step: Exit | None) -> None:
        if reply.keep:
            self.history.append(reply.message)
        self.pending = reply.tool_uses
        self.calls[-1]["decision"] = "continue" if step is CONTINUE else step.outcome.value
        self.state["activity"] = caption(reply.steps, self.state["activity"], self.activities)

    # ---- tools ----------------------------------------------------------

    async def run_tools(self, uses: Sequence[ToolUse], timeout: float) -> None:
        """Run the tool uses concurrently within `timeout`; append their results as one
        message, in order. A tool still running when the timeout fires is answered
        with an error result; the others keep theirs."""
        started = self.now()
        results: list[ToolResult | None] = [None] * len(uses)

        async def run(i: int, use: ToolUse) -> None:
            results[i] = await self.run_tool(use, timeout)

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
        self.calls[-1]["tools_duration"] = self.now() - started
        self.answer(
            [
                r or ToolResult(u.id, f"{u.name} did not finish within {timeout:.1f} s", True)
                for u, r in zip(uses, results, strict=True)
            ]
        )

    async def run_tool(self, use: ToolUse, timeout: float) -> ToolResult:
        try:
            return await self.toolset.call(use, timeout)
        except Exception as e:
            self.report(
                "tool_error",
                f"tool {use.name} raised {type(e).__name__}: {e}",
                logging.WARNING,
                details={"tool": use.name, "exception": type(e).__name__},
            )
            return ToolResult(use.id, f"{use.name} failed: {type(e).__name__}: {e}", True)

    def answer(self, results: Sequence[ToolResult]) -> None:
        self.history.extend(self.provider.tool_results(results))
        self.pending = ()

    # ---- publishing -----------------------------------------------------

    def bubble(self, message: dict[str, Any]) -> None:
        messages = self.state["messages"]
        messages.append({"id": f"m{self.message_offset + len(messages) + 1}", **message})

    def show(self, reply: Reply) -> None:
        """A bubble for the response's text, unless it has none worth showing."""
        if reply.text.strip():
            self.bubble({"role": "bot", "text": reply.text})

    def snapshot(self) -> dict[str, Any]:
        state = self.state
        state["version"] += 1
        state["usage"] = self.usage.as_dict()
        return {**state, "messages": list(state["messages"])}

    async def publish(self) -> None:
        await self.hooks.publish(self.snapshot())

    async def iteration_done(self) -> None:
        snapshot = self.snapshot()
        appended = self.history[self.checkpointed :]
        self.checkpointed = len(self.history)
        await self.hooks.checkpoint(
            Checkpoint(self.turn_id, self.usage.iterations, self.history, appended, snapshot)
        )
        await self.hooks.publish(snapshot)

    # ---- exits ----------------------------------------------------------

    def end(self, reply: Reply, outcome: Outcome) -> None:
        """Exit on a response: show the answer if finished, the outcome's notice otherwise."""
        if outcome is Outcome.FINISHED:
            self.show(reply)
            self.exit(outcome)
        else:
            self.exit(outcome, f"stop_reason {reply.raw_stop!r}", stop_reason=reply.raw_stop)

    def exit(
        self,
        outcome: Outcome,
        why: str = "",
        *,
        key: str | None = None,
        stop_reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.outcome = outcome
        self.error_key = key or OUTCOME_KEYS[outcome]
        if outcome in REPORTED:
            level, message = REPORTED[outcome]
            self.report(
                outcome.value,
                f"{message} after {counted(self.usage.iterations, 'iteration')}"
                + (f": {why}" if why else ""),
                level,
                stop_reason=stop_reason,
                details=details,
            )

    def overran(self) -> None:
        """The real-time backstop fired: a provider or toolset ignored its timeout."""
        why = "the deadline passed during a model call or tools that ignored their timeout"
        if self.calls and not {"response", "error"} & self.calls[-1].keys():
            self.calls[-1]["error"] = ProviderUnavailable(why).describe()
        self.exit(Outcome.TIME_LIMIT, why)

    def crashed(self, e: BaseException) -> None:
        """An exception escaped the loop: a hook failed (reported here), or the task was
        cancelled (not reported here: whoever cancelled it knows why and says so)."""
        if self.outcome is not None:
            return
        if isinstance(e, asyncio.CancelledError):
            self.outcome, self.error_key = Outcome.FAILED, OUTCOME_KEYS[Outcome.FAILED]
        else:
            self.exit(Outcome.FAILED, f"{type(e).__name__}: {e}", details={"exception": repr(e)})

    def report(
        self,
        event: str,
        message: str,
        level: int,
        *,
        stop_reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.hooks.report(
            Report(
                turn_id=self.turn_id,
                iteration=self.usage.iterations,
                event=event,
                message=message,
                level=level,
                stop_reason=stop_reason,
                usage=self.usage.copy(),
                details=details or {},
            )
        )

    # ---- the one finalisation -------------------------------------------

    async def finalise(self) -> None:
        """Runs once per turn on every path: answer dangling tools, clear, publish done, usage."""
        self.finalised += 1
        outcome = self.outcome or Outcome.FAILED
        if self.pending:
            self.answer(
                [
                    ToolResult(u.id, f"not run: the turn ended ({outcome.value})", True)
                    for u in self.pending
                ]
            )
        key = self.error_key
        if key is not None:
            self.bubble({"role": "bot", "key": key, "is_error": outcome is not Outcome.STOPPED})
        self.state.update(
            status=outcome.value,
            done=True,
            stopped=outcome is Outcome.STOPPED,
            has_error=outcome in ERROR_OUTCOMES,
            activity=None,
        )
        await self.hooks.clear()
        await self.publish()
        await self.hooks.record_usage(self.usage)

    def result(self) -> TurnResult:
        assert self.outcome is not None
        return TurnResult(
            outcome=self.outcome,
            state={**self.state, "messages": list(self.state["messages"])},
            history=self.history,
            usage=self.usage,
            trace=self.trace(),
        )

    def trace(self) -> dict[str, Any]:
        first = self.clock_reads[0] if self.clock_reads else 0.0
        return {
            "format": "turnkeeper.trace/1",
            "wire": self.provider.wire,
            "request": self.provider.describe(),
            "budget": self.budget.as_dict(),
            "turn_id": self.turn_id,
            "question": self.question,
            "prior": self.prior,
            "history": self.history,
            "calls": self.calls,
            "clock": [t - first for t in self.clock_reads],
            "stopped_at_check": self.stopped_at_check,
            "outcome": self.outcome.value if self.outcome else None,
            "usage": self.usage.as_dict(),
            "state": self.state,
        }
