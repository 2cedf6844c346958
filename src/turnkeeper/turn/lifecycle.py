"""Every way a turn leaves `running`, in one place: the closing tool results, the ended
(or waiting) state, the report and the watchers' notice are built here and nowhere else.

    running ──finish()──────▶ ended        the loop's one final write, with its `Ending`
       │ ────wait()─────────▶ waiting      a tool needs a person's yes: the resume record
       │                                   and the `waiting` checkpoint; no longer in flight
       │ ────fail()─────────▶ failed       a turn that could not finish (crashed or stalled
       │                      (or stopped)  job, expired lease, never claimed), from its
       │                                   last checkpoint
       │ ────resume_crashed()─▶ queued     after a crash, under the fence, as a new job
       │                                   (`resume_after_crash`; past `max_resumes`: failed)
    waiting ──stop_waiting()─▶ stopped     a Stop, or nobody answered within the timeout

Each exit writes the turn's last event of the run in the same transaction as its end
(`turn.ended`) or its wait (`turn.waiting`, after `approval.requested`); a turn ended
from the store, or queued again after a crash, first retracts the text its run
streamed and never showed (`events.unsettled`).

The loop calls `finish` and `wait` from its finalisation; the job, the sweeper and the
API call the others. A turn someone else must end is taken over and ended in one store
transaction (`Store.end_turn`), its end computed by a pure function of what was read
(`ended`): of two parties ending one turn (two Stops, a Stop and a sweeper, two
sweepers), one ends it and the others learn it was already decided (None). Whether an
exit was reported is what these functions return, never a flag kept elsewhere.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, Protocol

from ..cards import Card
from ..observe.report import Report, Reporter, log_report
from ..outcomes import Ending, Outcome, ending, unfinished
from ..providers import wire_format
from ..state import PublishedState
from ..store import EXPIRED, WAITING, FenceLost, Holder, Store
from ..store.records import Checkpoint, NewEvent, Recovery, ResumeRecord, Taken
from ..usage import Usage
from ..wire import Message, ToolResult, ToolUse
from . import approvals, events
from .approvals import Resume
from .events import Emitter
from .hooks import Hooks
from .model_call import CallRoom

NOT_RUN = "not run: the turn failed before the tool finished"
"""The result of a tool use a turn that failed left without one."""
FINALISED = "the turn was finalised from its last checkpoint"
NO_WORKER = "errors.no_worker"
"""The notice of a turn no worker of its assistant can run."""


class Enqueue(Protocol):
    """Where a turn queued again goes (the job queue)."""

    async def enqueue(self, turn_id: str) -> None: ...


class WaitEnd(StrEnum):
    """Why a waiting turn ends `stopped`."""

    STOPPED = "stopped"
    """A person stopped it while it waited."""
    NO_ANSWER = "no_answer"
    """Nobody decided within `approval_timeout`."""

    @property
    def key(self) -> str:
        """The notice the reader sees."""
        return "notices.approval_timeout" if self is WaitEnd.NO_ANSWER else "notices.stopped"

    @property
    def not_run(self) -> str:
        """The result of each tool use it leaves without one (`{tool}`: the tool's name)."""
        return approvals.NO_ANSWER if self is WaitEnd.NO_ANSWER else approvals.STOPPED

    @property
    def said(self) -> str:
        """What its report says happened."""
        if self is WaitEnd.NO_ANSWER:
            return "nobody answered its approval in time"
        return "stopped"


# ---- the loop's exits --------------------------------------------------------------


class Leaving(Protocol):
    """What the loop's turn (`loop._Turn`) gives its exit."""

    hooks: Hooks
    room: CallRoom
    events: Emitter
    state: PublishedState
    usage: Usage
    resume: Resume
    pending: tuple[ToolUse, ...]
    unshown: str | None
    cards: list[Card]

    def answer(self, results: Sequence[ToolResult]) -> None: ...

    def publish(self, state: PublishedState, *emitted: NewEvent) -> None: ...

    def written_since(self, emitted: Sequence[NewEvent]) -> Checkpoint: ...

    def report(self, event: str, message: str, level: int, **about: Any) -> None: ...


async def finish(turn: Leaving, end: Ending) -> None:
    """The loop's one final write: dangling tool uses answered (a resumed turn's known
    answers stand), the ended state, the watchers told. A final write that fails is
    reported here as the turn's failure (unless its ending is one already, or the turn
    was taken over: its new holder says how it ended)."""
    turn.events.retract(end.key or "")
    if turn.pending:
        why = f"not run: the turn ended ({end.outcome.value})"
        known = turn.resume.answered
        turn.answer([known.get(u.id) or ToolResult(u.id, why, True) for u in turn.pending])
    final = turn.state.ended(end, text=turn.unshown, usage=turn.usage)
    turn.publish(final, events.ended(final))
    turn.room.watch.turn_ended(end, turn.usage)
    try:
        await turn.hooks.finish(turn.written_since(await turn.events.settle()))
    except FenceLost:
        raise
    except Exception as e:
        if end.outcome is not Outcome.FAILED:
            failure = ending(Outcome.FAILED)
            said = f"its final write failed: {type(e).__name__}"
            turn.report(Outcome.FAILED.value, failure.says(turn.usage.iterations, said),
                        failure.reported_at)  # fmt: skip
        raise


async def wait(turn: Leaving, record: ResumeRecord) -> None:
    """The turn waits for a person: its `waiting` state and resume record written; the
    watchers told it is no longer in flight (its span ends `waiting`)."""
    asked = record.approvals
    turn.publish(
        turn.state.waiting(turn.unshown, turn.usage, (*turn.cards,), asked), *events.waiting(asked)
    )
    turn.room.watch.turn_waiting(turn.usage)
    await turn.hooks.wait(turn.written_since(await turn.events.settle()), record)


# ---- exits made from the store: what was recovered, ended in one transaction --------


def tail(taken: Taken, not_run: str) -> list[Message]:
    """What the history needs after the last checkpoint to be valid for the next turn.

    Without a checkpoint the question was never stored: it is added. A tool use left
    without a result gets its known one from the resume record, else an `is_error`
    result saying `not_run` (`{tool}`: the tool's name)."""
    recovery = taken.recovery
    if recovery.wire is None:
        return []
    wire = wire_format(recovery.wire)
    if not recovery.checkpointed:
        return [wire.user_message(recovery.question)]
    if recovery.last_message is None:
        return []
    uses = approvals.in_flight([recovery.last_message], wire)
    return wire.tool_results(approvals.closing(taken.record, uses, not_run)) if uses else []


def ended(taken: Taken, end: Ending, not_run: str) -> Checkpoint:
    """The final write of a turn ended from what was recovered: its tail, the recovered
    state ended with `end` (`done: true`), the usage as last recorded; its events retract
    what its run streamed and never showed, then say it ended."""
    recovery = taken.recovery
    state = recovery.state.ended(end, text=None, usage=recovery.usage)
    withdrawn = events.unsettled(taken.streamed, recovery.state, end.key)
    return Checkpoint(
        recovery.turn_id, recovery.usage.iterations, tail(taken, not_run), state, recovery.usage,
        events=[*withdrawn, events.ended(state)],
    )  # fmt: skip


def unfinished_end(taken: Taken) -> Checkpoint:
    """A turn that could not finish: `stopped` if its cancel had been asked, else `failed`."""
    return ended(taken, unfinished(taken.cancel), NOT_RUN)


async def fail(
    store: Store, turn_id: str, holder: Holder = EXPIRED, *, reporter: Reporter = log_report
) -> Ending | None:
    """End a turn that could not finish, from its last checkpoint, taken over from `holder`
    (the job: `held_by(fence)`; the sweeper: `EXPIRED`; the API: `UNCLAIMED`) in the same
    transaction; reported. Its `Ending`; None if it was not there to take (already
    ended, or in another position): nothing written, nothing reported."""
    done = await store.end_turn(turn_id, holder, unfinished_end)
    if done is None:
        return None
    end = unfinished(done.taken.cancel)
    reporter(_finalised(done.taken.recovery, end, expired=holder is EXPIRED))
    return end


async def no_worker(
    store: Store, turn_id: str, holder: Holder, why: str, *, reporter: Reporter = log_report
) -> Ending | None:
    """End a turn no worker of its assistant can run `failed`, its notice `errors.no_worker`:
    never claimed in time (the sweeper, `UNCLAIMED`), or it asks for a tool the worker that
    claimed it lacks (`held_by(fence)`). Reported, saying `why`; None if it was not there."""
    end = ending(Outcome.FAILED, NO_WORKER)
    done = await store.end_turn(turn_id, holder, lambda taken: ended(taken, end, NOT_RUN))
    if done is None:
        return None
    said = f"{FINALISED}: {why}"
    reporter(_report(done.taken.recovery, end.outcome.value, said, end.reported_at, finalised=True))
    return end


async def stop_waiting(
    store: Store, turn_id: str, why: WaitEnd = WaitEnd.STOPPED, reporter: Reporter = log_report
) -> bool:
    """End a waiting turn `stopped` (the notice `why.key`): its tool uses answered (those
    that ran keep their results), the history valid; taken over and ended in one
    transaction. False if it was not waiting (already decided: ended, or queued again)."""
    end = ending(Outcome.STOPPED, why.key)
    done = await store.end_turn(turn_id, WAITING, lambda taken: ended(taken, end, why.not_run))
    if done is None:
        return False
    message = f"the waiting turn ended: {why.said}"
    reporter(_report(done.taken.recovery, Outcome.STOPPED.value, message, end.reported_at))
    return True


async def resume_crashed(
    store: Store,
    turn_id: str,
    queue: Enqueue,
    max_resumes: int,
    reporter: Reporter = log_report,
) -> Ending | None:
    """A turn whose lease expired, taken over once: queued again from its last checkpoint
    under the new fence, as a new job (None); past `max_resumes`, ended under that fence
    as `fail()` ends one, the refusal reported (its `Ending`). None too if it was not
    there to take."""
    taken = await store.take_over(turn_id, EXPIRED)
    if taken is None:
        return None
    record = await store.resume_record(turn_id) or ResumeRecord()
    done = record.resumes
    if done >= max_resumes:
        why = f"its worker stopped again after {done} resumes (at most {max_resumes})"
        reporter(_report(taken, "resume_refused", why, logging.ERROR))
        streamed = await events.streamed(store, turn_id)
        whole = Taken(taken, record, await store.cancel_requested(turn_id), streamed)
        await store.finish(turn_id, taken.fence, unfinished_end(whole))
        end = unfinished(whole.cancel)
        reporter(_finalised(taken, end, expired=False))
        return end
    state = taken.state.requeued()
    # the next run streams into the same bubble anew: what this one streamed is withdrawn
    withdrawn = events.unsettled(await events.streamed(store, turn_id), taken.state,
                                 unfinished(False).key)  # fmt: skip
    await store.requeue(turn_id, taken.fence, record.requeued(taken.checkpointed), state,
                        withdrawn)  # fmt: skip
    await queue.enqueue(turn_id)
    message = (
        "its worker stopped; resumed from its last checkpoint"
        f" (resume {done + 1} of at most {max_resumes})"
    )
    reporter(_report(taken, "resumed", message, logging.WARNING))
    return None


def _finalised(recovery: Recovery, end: Ending, *, expired: bool) -> Report:
    message = FINALISED + (" after its worker's lease expired" if expired else "")
    return _report(recovery, end.outcome.value, message, end.reported_at, finalised=True)


def _report(
    recovery: Recovery,
    event: str,
    message: str,
    level: int = logging.INFO,
    *,
    finalised: bool = False,
) -> Report:
    """A report of the turn `recovery` holds; one `finalised` from its checkpoint says
    whether a checkpoint had written it (`details.checkpointed`)."""
    return Report(
        turn_id=recovery.turn_id,
        iteration=recovery.usage.iterations,
        event=event,
        message=message,
        level=level,
        usage=recovery.usage,
        details={"checkpointed": recovery.checkpointed} if finalised else {},
        conversation_id=recovery.conversation_id,
    )
