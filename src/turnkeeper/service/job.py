"""A queued turn: `TurnJob` runs it once; `lifecycle.fail()` ends one that could not finish.

    claim (lease, fence) → load history → run_turn with store-backed hooks → finish
                                  │ timeout, crash, lost lease
                                  └──────────────▶ lifecycle.fail(): recover from the checkpoint

A job runs a turn once: a turn that spent money and called tools is never run again
by a queue. The job's own timeout is the turn deadline plus a margin, so the final
write always happens; if it fires anyway, `fail()` runs. A worker that dies leaves
its lease to expire, and the sweeper ends the turn through the same `fail()`.
Every write presents the fence the claim returned, so a worker that wakes up after
being taken over writes nothing.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..budget import Budget
from ..credentials import redact_text
from ..observe.report import Report, Reporter, log_report
from ..observe.watchers import Watcher
from ..outcomes import Outcome, ending
from ..providers import Provider, instructed
from ..state import PublishedState
from ..store import UNCLAIMED, FenceLost, Store, held_by
from ..store.records import (
    Checkpoint,
    Compacted,
    Fate,
    NewEvent,
    Owner,
    ResumeRecord,
    Turn,
    TurnStart,
)
from ..tools import NoTools, Toolset
from ..tools.context import ToolContext
from ..turn import lifecycle
from ..turn.activity import ACTIVITIES
from ..turn.approvals import Resume
from ..turn.compaction import Compaction
from ..turn.loop import TurnResult, run_turn
from ..turn.resume import Resuming
from ..turn.setting import TurnSetting
from ..usage import Limits, LimitsSetting, Meter, Usage, limits_for
from ..wire import Message
from .leases import Leases

logger = logging.getLogger("turnkeeper.job")

DEFAULT_LEASE = 30.0
JOB_MARGIN = 15.0
"""Seconds the job timeout adds to the turn deadline, for the final write."""


class StoreHooks:
    """The loop's hooks, written to the store under one fence: one write per
    iteration, and the final write, which holds the history's tail, so whoever
    sees `done: true` also sees a history that is whole and valid for the next turn.

    The cancel flag is read back with each checkpoint, in its transaction; the stop
    check that follows at once (nothing is awaited in between) answers from it, so
    the store is read before a model call only when no checkpoint preceded it (the
    first call), and not at all once the stop wait has heard of a cancel."""

    def __init__(self, store: Store, turn_id: str, fence: int, reporter: Reporter) -> None:
        self.store = store
        self.turn_id = turn_id
        self.fence = fence
        self.reporter = reporter
        self._cancel: bool | None = None
        """The flag the last checkpoint read, for the one stop check after it; else None."""
        self._stopping = False
        """The stop wait returned: the turn's cancel was requested."""
        self.crash_resumes = 0
        """How many times a crash has resumed the turn (kept in its resume record)."""

    async def should_stop(self) -> bool:
        cancel, self._cancel = self._cancel, None
        if self._stopping or cancel:
            return True
        if cancel is None:  # no checkpoint since the last check: ask the store
            return await self.store.cancel_requested(self.turn_id)
        return False

    async def wait_stop(self) -> None:
        while True:
            try:
                await self.store.wait_cancel(self.turn_id)
                self._stopping = True
                return
            except Exception as e:  # a passing store error: the call goes on meanwhile
                logger.warning(
                    "turn %s: waiting for a cancel failed, will retry: %s", self.turn_id, e
                )
                await asyncio.sleep(1.0)

    def limit_reached(self) -> str | None:
        return None  # an assistant without limits; `MeteredHooks` meters the turn

    async def started(self, state: PublishedState) -> None:
        await self.store.publish(self.turn_id, self.fence, state)

    async def events(self, batch: Sequence[NewEvent]) -> None:
        await self.store.append_events(self.turn_id, self.fence, batch)

    async def record_usage(self, usage: Usage) -> None:
        await self.store.record_usage(self.turn_id, self.fence, usage)

    async def checkpoint(self, checkpoint: Checkpoint) -> None:
        self._cancel = await self.store.checkpoint(self.turn_id, self.fence, checkpoint)

    async def finish(self, final: Checkpoint) -> None:
        await self.store.finish(self.turn_id, self.fence, final)

    async def wait(self, checkpoint: Checkpoint, record: ResumeRecord) -> None:
        """The turn waits for a person: its resume record, then its `waiting` checkpoint."""
        record = replace(record, resumes=self.crash_resumes)
        await self.store.wait(self.turn_id, self.fence, record)
        await self.store.checkpoint(self.turn_id, self.fence, checkpoint)

    def report(self, report: Report) -> None:
        self.reporter(report)


Instructions = Callable[[ToolContext], "str | Awaitable[str]"]
"""An assistant's instructions as a function of who asks (`ToolContext`), sync or async."""


class MeteredHooks(StoreHooks):
    """`StoreHooks` whose writes also charge the ledger (`store/ledger.py`): the usage
    recorded before tools run, each checkpoint and the final write add what the turn's
    calls billed since the last charge, in the write's own transaction; the `running`
    publish and each checkpoint read the day's totals back, so the check before every
    model call (`limit_reached`) answers from them with no round trip of its own. A turn
    of an assistant without limits gets plain `StoreHooks`: no statement is added to its
    writes."""

    def __init__(
        self, store: Store, turn_id: str, fence: int, reporter: Reporter, meter: Meter
    ) -> None:
        super().__init__(store, turn_id, fence, reporter)
        self.meter = meter

    def limit_reached(self) -> str | None:
        return self.meter.reached()

    async def started(self, state: PublishedState) -> None:
        charge = self.meter.reading()
        await self.store.publish(self.turn_id, self.fence, state, charge)
        self.meter.read(charge)

    async def record_usage(self, usage: Usage) -> None:
        charge = self.meter.charge(usage)
        await self.store.record_usage(self.turn_id, self.fence, usage, charge)
        self.meter.read(charge)

    async def checkpoint(self, checkpoint: Checkpoint) -> None:
        charge = self.meter.charge(checkpoint.usage)
        self._cancel = await self.store.checkpoint(self.turn_id, self.fence, checkpoint, charge)
        self.meter.read(charge)

    async def finish(self, final: Checkpoint) -> None:
        charge = self.meter.charge(final.usage)
        await self.store.finish(self.turn_id, self.fence, final, charge)


@dataclass
class TurnJob:
    """Runs queued turns with one provider and toolset; `await job.run(turn_id)`."""

    store: Store
    provider: Provider
    toolset: Toolset = field(default_factory=NoTools)
    budget: Budget = field(default_factory=Budget)
    lease: float = DEFAULT_LEASE
    margin: float = JOB_MARGIN
    reporter: Reporter = log_report
    activities: Mapping[str, str] = field(default_factory=lambda: ACTIVITIES)
    """Tool names to caption keys (`activity.captions()` adds your own)."""
    watcher: Watcher | None = None
    """Spans and metrics of the turns (default: spans if a tracer provider is configured)."""
    resuming: Resuming = field(default_factory=Resuming)
    """Which tools wait for approval or may run again, and whether a crash resumes a turn
    (a turn queued with its own `Fate` is run by that instead)."""
    limits: LimitsSetting = None
    """The assistant's `limits`: with any, every turn is metered (`MeteredHooks`), so each
    user's day is known (`GET /api/usage`) whatever their own limits; without, none is."""
    compaction: Compaction | None = field(default_factory=Compaction)
    """How the turns' requests are kept inside the model's context window (None: off)."""
    instructions: Instructions | None = None
    """`instructions(ctx)`, sync or async: each turn's own instructions, from who asks and
    in which language (the assistant's callable `instructions`); None: the provider's."""
    owner: Owner | None = None
    """The assistant this job serves: it claims that assistant's turns by name, whichever
    version queued them (None: any)."""
    _leases: Leases = field(init=False, repr=False)
    _versions: set[Owner] = field(init=False, repr=False, default_factory=set)
    """The other versions of the assistant whose turns this job ran (each said once)."""

    def __post_init__(self) -> None:
        self._leases = Leases(self.store, self.lease)

    @property
    def timeout(self) -> float:
        """The job's own timeout: the turn's deadline and a margin for the final write."""
        return self.budget.deadline + self.margin

    async def run(self, turn_id: str) -> Outcome | None:
        """Run the turn if it is still queued; its outcome, or None if someone else has it."""
        name = None if self.owner is None else self.owner.assistant
        try:
            fence = await self.store.claim(turn_id, self.lease, self.provider.wire.name, name)
        except Exception as e:
            logger.exception("turn %s: the claim failed; finalising it unclaimed: %s", turn_id, e)
            await lifecycle.fail(self.store, turn_id, UNCLAIMED, reporter=self.reporter)
            return Outcome.FAILED
        if fence is None:
            await self._not_claimed(turn_id)
            return None
        try:
            async with self._leases.held(turn_id, fence) as lost:
                return await self._run(turn_id, fence, lost)
        except FenceLost as e:
            logger.warning("%s; the turn is left as its new holder wrote it", e)
            return None

    async def _not_claimed(self, turn_id: str) -> None:
        """Say why a turn handed to this job was not claimed: it is not queued any more, or
        an assistant of another name queued it (it stays queued, for a process of its own)."""
        turn = await self.store.turn(turn_id)
        owner = None if turn is None else turn.owner
        mine = None if self.owner is None else self.owner.assistant
        if turn is None or turn.done or owner is None or owner.assistant == mine:
            logger.info("turn %s is not queued any more; not running it again", turn_id)
            return
        logger.warning(
            "turn %s belongs to assistant %s; this process serves %s: left queued for a"
            " `turnkeeper worker APP` of its own assistant",
            turn_id,
            owner,
            self.owner,
        )

    async def _run(self, turn_id: str, fence: int, lost: asyncio.Event) -> Outcome | None:
        """The claimed turn run, between one INFO line as it starts and one as it ends (its
        outcome and seconds): what an operator greps a worker's log for."""
        start = await self.store.start(turn_id)
        assert start is not None, "a claimed turn exists"
        conversation, began = start.turn.conversation_id, time.monotonic()
        logger.info("turn %s of conversation %s: started", turn_id, conversation)
        outcome: Outcome | str | None = "interrupted"  # the process stopped, or the lease was lost
        try:
            outcome = await self._held(turn_id, start, fence, lost)
            return outcome
        finally:
            ended = outcome.value if isinstance(outcome, Outcome) else outcome or "waiting"
            took = time.monotonic() - began
            logger.info(
                "turn %s of conversation %s: %s after %.1f s", turn_id, conversation, ended, took
            )

    async def _held(
        self, turn_id: str, start: TurnStart, fence: int, lost: asyncio.Event
    ) -> Outcome | None:
        hooks = StoreHooks(self.store, turn_id, fence, self.reporter)
        try:
            async with asyncio.timeout(self.timeout) as clock:
                return await self._turn(turn_id, start, hooks, clock)
        except FenceLost:
            raise
        except asyncio.CancelledError:
            if lost.is_set():
                raise FenceLost(f"turn {turn_id}: the lease was lost; writes refused") from None
            # The process is stopping (or the queue aborted the job): finalise now, not
            # a lease later, so the conversation takes its next question at once.
            await self._finalise(turn_id, fence, "the process stopped it before it finished")
            raise
        except _Reported as e:  # the loop said how it failed; its end may be left to write
            logger.exception("turn %s: the job failed: %s", turn_id, e.__cause__)
            await lifecycle.fail(self.store, turn_id, held_by(fence), reporter=_quiet)
        except Exception as e:  # TimeoutError included: the job clock fired
            logger.exception("turn %s: the job failed: %s", turn_id, e)
            await self._finalise(turn_id, fence, e)
        return Outcome.FAILED

    async def _finalise(self, turn_id: str, fence: int, why: Exception | str) -> None:
        """End a turn the job's clock or the process cut short, and say why, once: the loop
        said nothing of it. Either `fail()` ends it here (and reports it), or the loop's
        own final write went through (it finalised the cut-short turn): then the job says
        why, unless the turn ended `stopped` (its reader asked for that)."""
        ended = await lifecycle.fail(self.store, turn_id, held_by(fence), reporter=self.reporter)
        if ended is not None:
            return  # ended here, and said so
        start = await self.store.start(turn_id)
        if start is None or start.state.status is not Outcome.STOPPED:
            self.reporter(_job_failed(turn_id, why))

    async def _turn(
        self, turn_id: str, start: TurnStart, hooks: StoreHooks, clock: asyncio.Timeout
    ) -> Outcome | None:
        turn = start.turn
        budget, resuming = self._fated(turn.fate)
        # the job's clock, on the turn's own deadline
        clock.reschedule(asyncio.get_running_loop().time() + budget.deadline + self.margin)
        if self.limits is not None:  # an assistant with limits keeps every user's day
            limits = limits_for(self.limits, turn.user) or Limits()
            meter = Meter(limits, turn.user, start.state.usage)
            hooks = MeteredHooks(self.store, turn_id, hooks.fence, self.reporter, meter)
        history, compacted = await self.store.context(turn.conversation_id)
        # A turn queued again (after a wait or a crash) has published more than `queued`.
        record = await self.store.resume_record(turn_id) if start.state.version > 1 else None
        hooks.crash_resumes = 0 if record is None else record.resumes
        resume = resuming.resume(record, history, self.provider.wire, start.state.usage)
        if not await self._can_run(turn, resume, hooks.fence):
            return Outcome.FAILED
        told = await self._instructions(turn_id, turn)
        try:
            with instructed(told):
                result = await self._run_turn(
                    turn_id, start, (history, compacted), hooks, resume, budget
                )
        except FenceLost:
            raise
        except Exception as e:
            raise _Reported(str(e)) from e
        if result.outcome is None and await self.store.cancel_requested(turn_id):
            await lifecycle.stop_waiting(self.store, turn_id, reporter=self.reporter)  # a Stop came
        return result.outcome

    async def _can_run(self, turn: Turn, resume: Resume, fence: int) -> bool:
        """Whether this job can run a turn another version of its assistant may have queued:
        said once per version; a turn that goes on with tools this worker lacks ends
        `failed` (`errors.no_worker`), reported, rather than run without them."""
        theirs, mine = turn.owner, self.owner
        if theirs is not None and mine is not None and theirs not in {mine, *self._versions}:
            self._versions.add(theirs)
            said = "running turns queued by assistant %s with version %s of it"
            logger.warning(said, theirs, mine.version)
        wanted = {use.name for use in resume.to_run()}
        lacking = sorted(wanted - {spec.name for spec in await self.toolset.list_tools()})
        if not lacking:
            return True
        version = "?" if mine is None else mine.version
        why = (
            f"it asks for {', '.join(lacking)}, which this worker (version {version}) lacks;"
            f" it was queued by {theirs or 'an assistant'}"
        )
        logger.warning("turn %s: %s", turn.turn_id, why)
        holder = held_by(fence)
        await lifecycle.no_worker(self.store, turn.turn_id, holder, why, reporter=self.reporter)
        return False

    async def _instructions(self, turn_id: str, turn: Turn) -> str | None:
        """The turn's instructions, asked once, here in the job (so a worker asks too); a
        sync function runs in a thread, as a sync tool does. What it raises fails the turn."""
        if self.instructions is None:
            return None
        context = ToolContext(turn.user, turn.locale, turn.conversation_id, turn_id)
        if inspect.iscoroutinefunction(self.instructions):
            told = await self.instructions(context)
        else:
            told = await asyncio.to_thread(self.instructions, context)
            told = await told if inspect.isawaitable(told) else told
        if not isinstance(told, str):
            raise TypeError(f"instructions(ctx) returned {type(told).__name__}, not a string")
        return told

    async def _run_turn(
        self, turn_id: str, start: TurnStart, context: tuple[list[Message], Compacted | None],
        hooks: StoreHooks, resume: Resume, budget: Budget,
    ) -> TurnResult:  # fmt: skip
        """The turn run by the loop: `context` is the conversation's history and its
        compaction, as the store read them."""
        turn, (history, compacted) = start.turn, context
        return await run_turn(
            turn.question,
            provider=self.provider,
            toolset=self.toolset,
            history=history,
            budget=budget,
            hooks=hooks,
            watcher=self.watcher,
            setting=TurnSetting(
                turn_id=turn_id,
                conversation_id=turn.conversation_id,
                start=start.state,
                user=turn.user,
                locale=turn.locale,
                resume=resume,
                activities=self.activities,
                compaction=self.compaction,
                compacted=compacted,
            ),
        )

    def _fated(self, fate: Fate | None) -> tuple[Budget, Resuming]:
        """The budget and the crash and approval settings a turn runs under: those it was
        queued with, else this job's own."""
        if fate is None:
            return self.budget, self.resuming
        return budget_of(fate), fated(self.resuming, fate)


def budget_of(fate: Fate) -> Budget:
    """The `Budget` a turn was queued with."""
    b, default = fate.budget, Budget()
    return Budget(
        max_iterations=int(b.get("max_iterations", default.max_iterations)),
        deadline=b.get("deadline", default.deadline),
        call_timeout=b.get("call_timeout", default.call_timeout),
        margin=b.get("margin", default.margin),
        min_call=b.get("min_call", default.min_call),
        tool_timeout=b.get("tool_timeout", default.tool_timeout),
    )


def fated(resuming: Resuming, fate: Fate | None) -> Resuming:
    """A process's `Resuming` with the turn's own crash and approval settings, if it has any."""
    if fate is None:
        return resuming
    return replace(
        resuming,
        resume_after_crash=fate.resume_after_crash,
        max_resumes=fate.max_resumes,
        approval_timeout=fate.approval_timeout,
    )


class _Reported(Exception):
    """An exception that came out of the loop: the loop reported it (`crashed()`, or
    `lifecycle.finish` when its final write failed), so the job says nothing more."""


def _job_failed(turn_id: str, e: Exception | str) -> Report:
    if isinstance(e, str):
        why = e
    elif isinstance(e, TimeoutError):
        why = "the job's timeout fired"
    else:
        why = redact_text(f"{type(e).__name__}: {e}")
    end = ending(Outcome.FAILED)
    return Report(turn_id, 0, end.outcome.value, f"{end.why}: {why}", end.level or logging.ERROR)


def _quiet(report: Report) -> None:
    """For a failure the loop already reported."""
