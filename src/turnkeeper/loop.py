"""The turn loop: call the model, run the tools it asks for, append, repeat.

One `while` loop, top to bottom. Stop reasons are control flow (docs/design.md
§3): `decide()` maps each response to *continue* or *exit with an outcome*,
the caps and the cancel flag are checked before every call (a cancel during one
aborts it), and every exit leaves the loop by `break` so that the single
finalisation in `finally` runs exactly once, whatever happened. The published
state moves only through its own transitions; the trace is the `Recorder`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any, assert_never

from .activity import ACTIVITIES, caption
from .approvals import Parked, Resume
from .budget import Budget
from .cards import Card
from .clock import Clock, monotonic
from .errors import ProviderError
from .hooks import Hooks, LocalHooks
from .i18n import counted
from .instruments import Watcher, watch_turn, watched_tools
from .outcomes import OUTCOME_KEYS, Outcome, Stop
from .providers import Provider
from .records import Checkpoint
from .report import REPORTED, Report
from .state import PublishedState, queued
from .tools import NoTools, Toolset
from .tools.context import ToolContext, running
from .trace import Recorder
from .usage import Usage
from .wire import Message, Reply, ToolResult, ToolSpec, ToolUse


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


@dataclass
class TurnResult:
    outcome: Outcome | None
    """None: the turn is waiting for a person (`state` is `waiting`); another job resumes it."""
    state: PublishedState
    """The final published state (`done: true`)."""
    history: list[Message]
    """The whole history, prior messages included, valid to send as the next request."""
    usage: Usage
    record: Callable[[], dict[str, Any]] = field(repr=False)

    @cached_property
    def trace(self) -> dict[str, Any]:
        """The turn's trace, written out when first read (most callers never do)."""
        return self.record()


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
    start: PublishedState | None = None,
    watcher: Watcher | None = None,
    context: ToolContext | None = None,
    resume: Resume | None = None,
) -> TurnResult:
    """Run one turn of `question` after `history`; never raises for what the model or tools do.

    `start` is the turn's state as last published (the store's `queued` state,
    with the user's bubble); without one, the turn has published nothing yet. `watcher`
    sees its calls and tools (default: OpenTelemetry spans, if a tracer provider is set).
    `context` is what the tools that ask for a `ToolContext` get (default: no user, `en`).
    `resume`: which tools wait for approval, and where a resumed turn goes on (approvals.py).
    """
    first = start or queued(turn_id, conversation_id, question, version=0)
    watch = watch_turn(watcher, provider, first, question)
    turn = _Turn(
        provider=provider,
        toolset=watched_tools(toolset or NoTools(), watch),
        budget=budget or Budget(),
        hooks=hooks or LocalHooks(),
        recorder=Recorder(provider, budget or Budget(), clock, watch),
        activities=activities,
        history=list(history),
        state=first,
        resume=resume or Resume(),
    )
    with running(context or ToolContext(None, "en", conversation_id, turn_id)):
        await turn.run(question)
    return turn.result(question)


class _Turn:
    """The mutable state of one turn and the steps the loop takes on it."""

    def __init__(
        self,
        *,
        provider: Provider,
        toolset: Toolset,
        budget: Budget,
        hooks: Hooks,
        recorder: Recorder,
        activities: Mapping[str, str],
        history: list[Message],
        state: PublishedState,
        resume: Resume,
    ) -> None:
        self.resume = resume
        self.paused: Parked | None = None
        self.provider = provider
        self.toolset = toolset
        self.budget = budget
        self.hooks = hooks
        self.recorder = recorder
        self.activities = activities
        self.history = history
        self.prior = len(history)
        self.state = state
        self.usage = resume.usage.copy() if resume.usage else Usage()
        recorder.earlier, recorder.resumed = self.usage.iterations, resume.why
        self.outcome: Outcome | None = None
        self.error_key: str | None = None
        self.pending: tuple[ToolUse, ...] = resume.uses
        """Client tool uses appended to the history and not yet answered."""
        self.activity: str | None = None
        self.unshown: str | None = None
        self.cards: list[Card] = []
        """Text of a response that is to be shown, then its tools' cards: not published yet."""
        self.written = (len(history), 0)
        """History messages and model calls already handed to the hooks."""
        self.deadline = recorder.started + budget.deadline - resume.working

    # ---- the loop -------------------------------------------------------

    async def run(self, question: str) -> None:  # noqa: C901 (the loop, kept in one piece)
        # Each call and tool round has its own timeout; this one, in real time, only
        # catches a provider or toolset that ignores the timeout it was given.
        backstop = asyncio.timeout(self.budget.deadline)
        try:
            if not self.resume.asked:
                self.history.append(self.provider.user_message(question))
            self.state = self.state.running()
            await self.hooks.started(self.state)
            async with backstop:
                tools = await self.toolset.list_tools()
                while True:
                    if self.recorder.stop_checked(await self.hooks.should_stop()):
                        self.exit(Outcome.STOPPED)
                        break
                    await self.answer_resumed()
                    timeout = self.budget.timeout_for_call(self.deadline - self.recorder.now())
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
                        left = self.deadline - self.recorder.now()
                        tools_timeout = self.budget.timeout_for_tools(left)
                        if tools_timeout is None:
                            self.exit(Outcome.TIME_LIMIT, "no time left to run the tools")
                            break
                        if await self.waits(reply.tool_uses, tools_timeout):
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

    # ---- the model call -------------------------------------------------

    async def call(self, tools: Sequence[ToolSpec], timeout: float) -> Reply | None:
        """One model call, raced against a stop; None, with the exit set, on failure or stop."""
        try:
            reply = await self.recorder.call(self.history, tools, timeout, self.hooks.wait_stop)
        except ProviderError as error:
            self.exit(Outcome.FAILED, str(error), key=error.key, details=error.describe())
            return None
        if reply is None:  # a stop aborted the call: nothing to append, no usage to count
            self.exit(Outcome.STOPPED)
            return None
        self.usage.add(self.recorder.usage(reply))
        if reply.tool_uses:  # else the next write, made at once, carries the usage
            await self.hooks.record_usage(self.usage)
        return reply

    def append(self, reply: Reply, step: Exit | None) -> None:
        if reply.keep:
            self.history.append(reply.message)
        self.pending = reply.tool_uses
        self.activity = caption(reply.steps, self.activity, self.activities)
        self.recorder.decided("continue" if step is CONTINUE else step.outcome.value, self.activity)

    # ---- tools ----------------------------------------------------------

    async def run_tools(self, uses: Sequence[ToolUse], timeout: float) -> None:
        self.answer(await self.ran(uses, timeout))

    async def ran(self, uses: Sequence[ToolUse], timeout: float) -> list[ToolResult]:
        """Run the tool uses concurrently within `timeout`; their results, in order. A tool
        still running when the timeout fires is answered with an error result; the others
        keep theirs."""
        started = self.recorder.now()
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
        self.recorder.tools_took(self.recorder.now() - started)
        return [
            r or ToolResult(u.id, f"{u.name} did not finish within {timeout:.1f} s", True)
            for u, r in zip(uses, results, strict=True)
        ]

    async def waits(self, uses: Sequence[ToolUse], timeout: float) -> bool:
        """Before the tools run: a checkpoint, if a crash is to lose no response; then, if
        some need a person's yes, run the others and stop working (True): the turn waits."""
        gated = self.resume.gated(uses)
        if gated:
            self.recorder.decided("waiting", self.activity)
        if self.resume.checkpoint_tools:
            await self.iteration_done()
        if not gated:
            return False
        ran = await self.ran([u for u in uses if u.name not in self.resume.needs_approval], timeout)
        worked = self.resume.working + self.recorder.now() - self.recorder.started
        self.paused = Parked.of(uses, ran, self.activities, worked)
        return True

    async def answer_resumed(self) -> None:
        """A resumed turn first answers the uses its last response left (approved ones and,
        after a crash, idempotent ones run now), unless a stop came; then the next call."""
        if not self.resume.uses or self.recorder.calls:  # answered before this job's 1st call
            return
        left = self.budget.timeout_for_tools(self.deadline - self.recorder.now())
        run = self.resume.to_run()
        self.answer(self.resume.results(await self.ran(run, left or 0.001) if run else []))
        await self.iteration_done()

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
        self.pending, self.cards = (), [*self.cards, *(r.card for r in results if r.card)]

    # ---- publishing -----------------------------------------------------

    def show(self, reply: Reply) -> None:
        """The response's text is shown with the next publish, unless it has none worth showing."""
        if reply.text.strip():
            self.unshown = reply.text

    async def iteration_done(self) -> None:
        self.state = self.state.iterated(self.activity, self.unshown, self.usage, (*self.cards,))
        self.unshown, self.cards = None, []
        await self.hooks.checkpoint(self.written_since())

    def written_since(self) -> Checkpoint:
        """What changed since the last write, with the current state."""
        messages, calls = self.written
        self.written = (len(self.history), len(self.recorder.calls))
        return Checkpoint(
            turn_id=self.state.turn_id,
            iteration=self.usage.iterations,
            appended=self.history[messages:],
            state=self.state,
            usage=self.usage.copy(),
            calls=self.recorder.calls[calls:],
        )

    # ---- exits ----------------------------------------------------------

    def end(self, reply: Reply, outcome: Outcome) -> None:
        """Exit on a response: show the answer if finished, the outcome's notice otherwise."""
        if outcome is Outcome.FINISHED:
            self.show(reply)
            self.exit(outcome)
        else:
            self.exit(outcome, f"stop_reason {reply.raw_stop!r}", stop_reason=reply.raw_stop)

    def exit(
        self, outcome: Outcome, why: str = "", *, key: str | None = None, **about: Any
    ) -> None:
        """End with `outcome`, shown as its notice `key` (else the outcome's own); reported
        if it is one of those, saying `why`, with `about` (the `stop_reason`, `details`)."""
        self.outcome = outcome
        self.error_key = key or OUTCOME_KEYS[outcome]
        if outcome in REPORTED:
            level, message = REPORTED[outcome]
            message += f" after {counted(self.usage.iterations, 'iteration')}"
            message += f": {why}" if why else ""
            self.report(outcome.value, message, level, **about)

    def overran(self) -> None:
        """The real-time backstop fired: a provider or toolset ignored its timeout."""
        why = "the deadline passed during a model call or tools that ignored their timeout"
        self.recorder.overran(why)
        self.exit(Outcome.TIME_LIMIT, why)

    def crashed(self, e: BaseException) -> None:
        """An exception escaped the loop: a hook failed (reported here), or the task was
        cancelled (`cut_short`; not reported here: whoever cancelled it says why)."""
        if self.outcome is None and not isinstance(e, asyncio.CancelledError):
            self.exit(Outcome.FAILED, f"{type(e).__name__}: {e}", details={"exception": repr(e)})

    async def cut_short(self) -> Outcome:
        """The task was cancelled (the process stopping): `stopped` if the reader had asked
        for that meanwhile, else `failed` (also when the hooks cannot say)."""
        stop = False
        with contextlib.suppress(Exception):
            stop = await self.hooks.should_stop()
        self.outcome = Outcome.STOPPED if stop else Outcome.FAILED
        self.error_key = OUTCOME_KEYS[self.outcome]
        return self.outcome

    def report(self, event: str, message: str, level: int, **about: Any) -> None:
        """Through the hooks, with the turn's ids, usage and elapsed time; `about` holds the
        report's `stop_reason` and `details`, when it has them."""
        self.hooks.report(
            Report(
                turn_id=self.state.turn_id,
                iteration=self.usage.iterations,
                event=event,
                message=message,
                level=level,
                usage=self.usage.copy(),
                conversation_id=self.state.conversation_id,
                elapsed=self.recorder.clock_reads[-1] - self.recorder.started,
                **about,
            )
        )

    # ---- the one finalisation -------------------------------------------

    async def finalise(self) -> None:
        """Runs once per turn on every path: answer dangling tools, then the one final write."""
        self.recorder.close()
        if self.paused is not None and self.outcome is None:
            self.state = self.paused.state(self.state, self.unshown, self.usage, self.cards)
            await self.hooks.pause(self.written_since(), self.paused)
            return
        outcome = self.outcome or await self.cut_short()
        why = f"not run: the turn ended ({outcome.value})"
        if self.pending:
            known = self.resume.answered  # a resumed turn's answers stand
            self.answer([known.get(u.id) or ToolResult(u.id, why, True) for u in self.pending])
        self.state = self.state.ended(
            outcome, text=self.unshown, key=self.error_key, usage=self.usage
        )
        self.recorder.watch.turn_ended(outcome, self.usage)
        await self.hooks.finish(self.written_since())

    def result(self, question: str) -> TurnResult:
        return TurnResult(
            outcome=self.outcome,
            state=self.state,
            history=self.history,
            usage=self.usage,
            record=partial(
                self.recorder.trace,
                turn_id=self.state.turn_id,
                question=question,
                prior=self.prior,
                history=self.history,
                outcome=self.outcome.value if self.outcome else "waiting",
                usage=self.usage.as_dict(),
                state=self.state.to_json(),
                **self.resume.traced(),
            ),
        )
