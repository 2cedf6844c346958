"""The turn loop: call the model, run the tools it asks for, append, repeat.

One `while` loop, top to bottom. Stop reasons are control flow (docs/design.md §3):
`decide()` maps each response to *go on* or *end with an outcome*, the caps and the
cancel flag are checked before every call (a cancel during one aborts it). However the
turn ends, `end()` gives it its `Ending` and the loop leaves by `break`, so that the single
finalisation in `finally` runs exactly once, whatever happened: the turn's one exit from
running (`lifecycle.py`), its final write, or its `waiting` write when a tool waits for a
person. The published state moves only through its own transitions; model calls happen in
the turn's `CallRoom` (`model_call.py`), which tells the turn's `CallLog` what the trace
records; each response's tools run as a round (`tool_round.py`: run, or first wait for a
person's yes), whose `Round` the loop applies; the event log (`events.py`) is told the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

from ..budget import Budget
from ..cards import Card
from ..credentials import redact_text
from ..errors import ProviderError
from ..observe.report import Report
from ..observe.watchers import Watcher, watch_turn, watched_tools
from ..outcomes import Ending, Outcome, Status, decide, details_of, ending, unfinished
from ..providers import Provider
from ..state import PublishedState
from ..store.records import Checkpoint, EventType, NewEvent, ResumeRecord
from ..tools import NoTools, Toolset
from ..tools.context import running
from ..usage import Usage
from ..wire import Message, Reply, ToolResult, ToolSpec, ToolUse
from . import compacting, lifecycle, tool_round
from .activity import answered, ran
from .approvals import Resume
from .call_log import CallLog
from .clock import TurnClock
from .events import Emitter
from .hooks import Hooks, LocalHooks
from .model_call import CallRoom
from .setting import TurnSetting
from .stop_race import StopRace
from .tool_round import Round, ToolRunner
from .trace import Trace


@dataclass
class TurnResult:
    """What `run_turn` returns: how the turn ended, its state, history, usage and trace."""

    outcome: Outcome | None
    """None: the turn waits for a person (`state` is `waiting`); another job resumes it."""
    state: PublishedState
    """The final published state (`done: true`), or the `waiting` one."""
    history: list[Message]
    """The whole history, prior messages included, valid to send as the next request."""
    usage: Usage
    record: Callable[[], Trace] = field(repr=False)

    @cached_property
    def trace(self) -> Trace:
        """The turn's trace, put together when first read (most callers never do);
        `trace.write_trace` saves it, `replay.replay` runs it again."""
        return self.record()


async def run_turn(
    question: str,
    *,
    provider: Provider,
    toolset: Toolset | None = None,
    history: Sequence[Message] = (),
    budget: Budget | None = None,
    hooks: Hooks | None = None,
    watcher: Watcher | None = None,
    setting: TurnSetting | None = None,
) -> TurnResult:
    """Run one turn of `question` after `history`; never raises for what the model or tools do.

    `setting` is what the job knows of the turn (`TurnSetting`: its ids, the state last
    published, who asked, where a resumed turn goes on, its captions and clock; default: a
    local turn). `watcher` sees its calls and tools (default: OpenTelemetry spans, if a
    tracer provider is set).
    """
    given = setting or _LOCAL
    compaction, provider = given.compaction, compacting.served(provider, given.compaction)
    first, go_on, hooks = given.first(question), given.resume, hooks or LocalHooks()
    watch = watch_turn(watcher, provider, first, question)
    usage, clock = go_on.usage_so_far(), TurnClock(given.clock)
    log = CallLog(earlier=usage.iterations, resumed=go_on.why)
    turn = _Turn(
        provider=provider,
        toolset=watched_tools(toolset or NoTools(), watch),
        budget=budget or Budget(),
        hooks=hooks,
        events=Emitter(hooks),
        clock=clock,
        log=log,
        room=CallRoom(
            provider, clock, StopRace(hooks.wait_stop), log, watch, compaction, given.compacted
        ),
        activities=given.activities,
        history=list(history),
        state=first,
        usage=usage,
        resume=go_on,
        pending=go_on.uses,
    )
    with running(given.context):
        await turn.run(question)
    return turn.result(question)


_LOCAL = TurnSetting()
"""A local turn's setting: a value, so one serves every turn run without one."""


@dataclass(eq=False)
class _Turn:
    """The mutable state of one turn and the steps the loop takes on it."""

    provider: Provider
    toolset: Toolset
    budget: Budget
    hooks: Hooks
    events: Emitter
    """The turn's events on their way to the hooks (events.py)."""
    clock: TurnClock
    log: CallLog
    room: CallRoom
    activities: Mapping[str, str]
    history: list[Message]
    state: PublishedState
    usage: Usage = field(default_factory=Usage)
    resume: Resume = field(default_factory=Resume)
    waiting: ResumeRecord | None = None
    """The resume record of a turn that stops to wait for a person."""
    ending: Ending | None = None
    pending: tuple[ToolUse, ...] = ()
    """Client tool uses appended to the history and not yet answered."""
    activity: str | None = None
    unshown: str | None = None
    cards: list[Card] = field(default_factory=list)
    """Text of a response that is to be shown, then its tools' cards: not published yet."""

    def __post_init__(self) -> None:
        self.prior = len(self.history)
        self.written = (self.prior, 0)
        """History messages and model calls already handed to the hooks."""
        self.deadline = self.clock.started + self.budget.deadline - self.resume.working
        self.tools = ToolRunner(self.toolset, self.clock, self.report, self.events)
        """The turn's until it is over: `finalise` lets it go (it and `report` are a cycle)."""

    # ---- the loop -------------------------------------------------------

    async def run(self, question: str) -> None:  # noqa: C901 (the loop, kept in one piece)
        # Each call and tool round has its own timeout; this one, in real time, only
        # catches a provider or toolset that ignores the timeout it was given.
        backstop = asyncio.timeout(self.budget.deadline)
        try:
            if not self.resume.asked:
                self.history.append(self.provider.user_message(question))
            self.state = self.state.running()
            self.events.emit(EventType.TURN_STARTED, {})
            await self.hooks.started(self.state)
            async with backstop:
                tools = await self.toolset.list_tools()
                while True:
                    if self.must_end(await self.hooks.should_stop()):
                        break
                    if self.resume.uses and not self.log.made:
                        await self.answer_resumed()
                    timeout = self.budget.timeout_for_call(self.deadline - self.clock.now())
                    if timeout is None:
                        self.end(Outcome.TIME_LIMIT, "too little time left to start a model call")
                        break
                    reply = await self.call(tools, timeout)
                    if reply is None:
                        break
                    outcome = decide(reply)
                    self.append(reply, outcome)
                    if outcome is not None:
                        self.end_on(reply, outcome)
                        break
                    self.show(reply)
                    if self.usage.iterations - self.room.window.calls >= self.budget.max_iterations:
                        self.end(Outcome.ITERATION_LIMIT, "the model wanted another step")
                        break
                    if reply.tool_uses:
                        left = self.deadline - self.clock.now()
                        tools_timeout = self.budget.timeout_for_tools(left)
                        if tools_timeout is None:
                            self.end(Outcome.TIME_LIMIT, "no time left to run the tools")
                            break
                        if self.applied(await self.run_tools(reply.tool_uses, tools_timeout)):
                            break
                    await self.iteration_done()
        except BaseException as e:
            if isinstance(e, TimeoutError) and backstop.expired():  # the room says what overran
                self.end(Outcome.TIME_LIMIT, self.room.overran())
            else:
                self.crashed(e)
                raise
        finally:
            await self.finalise()

    # ---- the model call -------------------------------------------------

    def must_end(self, stop: bool) -> bool:
        """Before every model call: the reader asked to stop (`stop`), or the day's limit is up."""
        if self.room.race.checked(stop):
            self.end(Outcome.STOPPED)
            return True
        if (limit := self.hooks.limit_reached()) is not None:
            self.end(Outcome.LIMIT_REACHED, f"{limit} is used up")
            return True
        return False

    async def call(self, tools: Sequence[ToolSpec], timeout: float) -> Reply | None:
        """One model call, raced against a stop; None, the turn ended, on failure or stop."""
        self.events.begin(self.state)
        try:
            called = await compacting.sent(self, tools, timeout, self.events.text)
        except ProviderError as error:
            self.end(Outcome(error.outcome), str(error), key=error.notice, details=error.describe())
            return None
        except compacting.LimitReached as reached:  # used up by compaction's own calls
            self.end(Outcome.LIMIT_REACHED, str(reached))
            return None
        if called is None:  # a stop aborted the call: nothing to append, no usage to count
            self.end(Outcome.STOPPED)
            return None
        self.usage.add(called.usage)
        if called.reply.tool_uses:  # else the next write, made at once, carries the usage
            await self.hooks.record_usage(self.usage)
        return called.reply

    def append(self, reply: Reply, outcome: Outcome | None) -> None:
        if reply.keep:
            self.history.append(reply.message)
        self.pending = reply.tool_uses
        self.activity = self.events.captioned(self.activity, ran(reply), self.activities)
        self.events.replied(reply.text, outcome)
        self.log.decided("continue" if outcome is None else outcome.value, self.activity)

    # ---- tools ----------------------------------------------------------

    async def run_tools(self, uses: Sequence[ToolUse], timeout: float) -> Round:
        """The round of a response's tool uses; first, if some wait for a person's yes, the
        call's decision says so, and the checkpoint, if a crash is to lose no response."""
        gated = self.resume.gated(uses)
        if gated:
            self.log.decided("waiting", self.activity)
        if self.resume.checkpoint_tools:
            await self.iteration_done()
        if not gated:
            return await self.tools.ran(uses, timeout)
        return await tool_round.waiting(self.tools, self.resume, uses, timeout, self.activities)

    async def answer_resumed(self) -> None:
        """Before this job's first call, a resumed turn answers the uses its last response left."""
        left = self.budget.timeout_for_tools(self.deadline - self.clock.now())
        self.applied(await tool_round.resumed(self.tools, self.resume, left))
        await self.iteration_done()

    def applied(self, done: Round) -> bool:
        """Apply a round of tools; True: the turn stops working to wait for a person."""
        if done.seconds is not None:
            self.log.tools_took(done.seconds)
        if done.waits is not None:
            self.waiting = done.waits
            return True
        self.answer(done.results)
        return False

    def answer(self, results: Sequence[ToolResult]) -> None:
        self.history.extend(self.provider.tool_results(results))
        ran_now = answered(self.pending, results)
        self.activity = self.events.captioned(self.activity, ran_now, self.activities)
        self.log.ran(self.activity)
        self.pending, self.cards = (), [*self.cards, *(r.card for r in results if r.card)]

    # ---- publishing -----------------------------------------------------

    def show(self, reply: Reply) -> None:
        """The response's text is shown with the next publish, unless it has none worth showing."""
        if reply.text.strip():
            self.unshown = reply.text

    async def iteration_done(self) -> None:
        self.publish(self.state.iterated(self.activity, self.unshown, self.usage, (*self.cards,)))
        self.unshown, self.cards = None, []
        await self.hooks.checkpoint(self.written_since(await self.events.settle()))

    def publish(self, state: PublishedState, *emitted: NewEvent) -> None:
        """Move to `state`, with the events of the cards it shows, then `emitted`."""
        self.events.moved(self.state, state, *emitted)
        self.state = state

    def written_since(self, emitted: Sequence[NewEvent]) -> Checkpoint:
        """What changed since the last write, with the state just published and its events."""
        messages, calls = self.written
        since = self.log.since(calls)
        self.written = (len(self.history), calls + len(since))  # the log's `made`
        return Checkpoint(
            turn_id=self.state.turn_id,
            iteration=self.usage.iterations,
            appended=self.history[messages:],
            state=self.state,
            usage=self.state.usage,  # its copy of the usage so far: shared, not copied again
            calls=since,
            events=emitted,
            compacted=self.room.window.written() if self.room.window.changed else None,
        )

    # ---- how the turn ends ---------------------------------------------

    def end_on(self, reply: Reply, outcome: Outcome) -> None:
        """End on a response: show the answer if finished, the outcome's notice otherwise."""
        if outcome is Outcome.FINISHED:
            self.show(reply)
        why = "" if outcome is Outcome.FINISHED else f"stop_reason {reply.raw_stop!r}"
        self.end(outcome, why, stop_reason=reply.raw_stop, details=details_of(reply))

    def end(self, outcome: Outcome, why: str = "", *, key: str | None = None, **about: Any) -> None:
        """End with `outcome`'s `Ending` (its notice `key`, if given: a failure's error's);
        reported if it is, saying `why`, with `about` (the `stop_reason`, `details`)."""
        self.ending = end = ending(outcome, key)
        if end.level is not None:
            self.report(outcome.value, end.says(self.usage.iterations, why), end.level, **about)

    def crashed(self, e: BaseException) -> None:
        """An exception escaped the loop: a hook failed (reported), or it was `cut_short`."""
        if self.ending is None and not isinstance(e, asyncio.CancelledError):
            why = redact_text(f"{type(e).__name__}: {e}")
            self.end(Outcome.FAILED, why, details={"exception": redact_text(repr(e))})

    async def cut_short(self) -> Ending:
        """Cancelled (the process stopping): `stopped` if the reader asked, else `failed`."""
        stop = False
        with contextlib.suppress(Exception):
            stop = await self.hooks.should_stop()
        self.ending = unfinished(stop)
        return self.ending

    def report(self, event: str, message: str, level: int, **about: Any) -> None:
        """Through the hooks, with the turn's ids, usage and time (`about`: its extra fields)."""
        self.hooks.report(
            Report(
                turn_id=self.state.turn_id,
                iteration=self.usage.iterations,
                event=event,
                message=message,
                level=level,
                usage=self.usage.copy(),
                conversation_id=self.state.conversation_id,
                elapsed=self.clock.elapsed,
                **about,
            )
        )

    # ---- the one finalisation -------------------------------------------

    async def finalise(self) -> None:
        """Runs once per turn on every path: its one exit from running (lifecycle.py), the
        final write or, for a turn that waits for a person, its `waiting` write."""
        self.room.close()
        del self.tools
        if self.waiting is not None and self.ending is None:
            await lifecycle.wait(self, self.waiting)
        else:
            await lifecycle.finish(self, self.ending or await self.cut_short())

    def result(self, question: str) -> TurnResult:
        outcome = None if self.ending is None else self.ending.outcome
        record = partial(self.traced, question, outcome or Status.WAITING)
        return TurnResult(outcome, self.state, self.history, self.usage, record)

    def traced(self, question: str, outcome: Outcome | Status) -> Trace:
        return Trace(
            wire=self.provider.wire.name,
            question=question,
            prior=self.prior,
            history=self.history,
            outcome=outcome,
            budget=self.budget,
            calls=self.log.records,
            clock=self.clock.offsets(),
            request={**self.room.described, **self.room.window.traced()},
            turn_id=self.state.turn_id,
            usage=self.usage,
            state=self.state,
            stopped_at_check=self.room.race.stopped_at_check,
            resume=self.resume.traced(),
        )
