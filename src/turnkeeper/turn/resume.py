"""Waiting and resuming, at the edges: ending a turn that waits, queueing a crashed one again.

The data and the pure decisions are `approvals.py`'s; this module does their
I/O for the API (a Stop while waiting), the job (a Stop that came as the turn
parked) and the sweeper:

    waiting ──decide (all)──▶ queued ──▶ a new job resumes it (approvals.py)
       │ Stop, or no answer within `approval_timeout`
       └──────────────▶ end_waiting(): `stopped`, its tool uses answered
    running, lease expired ──resume_after_crash──▶ queued again (at most
       `max_resumes` times; then `failed()` with a report)

A resumed turn is a new job (`tries = 1` per job): nothing is retried by a queue.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Protocol

from ..observe.report import Report, Reporter, log_report
from ..outcomes import Outcome, ending, unfinished
from ..providers import wire_format
from ..store import EXPIRED, WAITING, Store
from ..store.records import Checkpoint, Recovery, ResumeRecord
from ..usage import Usage
from ..wire import Message, WireFormat
from . import approvals
from .approvals import Resume, resume_from
from .events import ended, unsettled

logger = logging.getLogger("turnkeeper.resume")

DAY = 24 * 3600.0
NO_ANSWER_KEY = "notices.approval_timeout"
"""The notice of a turn that waited longer than `approval_timeout` for a person."""


class Enqueue(Protocol):
    async def enqueue(self, turn_id: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Resuming:
    """An assistant's settings for turns that wait and resume (docs/design.md §11)."""

    needs_approval: frozenset[str] = field(default_factory=frozenset)
    """Tools that run only once a person approves the call."""
    idempotent: frozenset[str] = field(default_factory=frozenset)
    """Tools a turn resumed after a crash may run again."""
    resume_after_crash: bool = False
    """A turn whose lease expires resumes from its last checkpoint instead of failing."""
    max_resumes: int = 2
    """How many times a crash may resume one turn before it is finalised as `failed`."""
    approval_timeout: float = DAY
    """Seconds a turn may wait for a person before it ends `stopped`."""

    def resume(
        self,
        record: ResumeRecord | None,
        history: list[Message],
        wire: WireFormat,
        usage: Usage,
    ) -> Resume:
        """What a job runs a turn with (a fresh turn without a record)."""
        return resume_from(
            record,
            history,
            wire,
            usage,
            needs_approval=self.needs_approval,
            idempotent=self.idempotent,
            checkpoint_tools=self.resume_after_crash,
        )


async def end_waiting(
    store: Store, turn_id: str, key: str = "notices.stopped", reporter: Reporter = log_report
) -> bool:
    """End a waiting turn `stopped` with the notice `key`: its tool uses answered (those
    that ran keep their results), the history valid. False if it was not waiting."""
    recovery = await store.take_over(turn_id, WAITING)
    if recovery is None:
        return False
    record = await store.resume_record(turn_id)
    why = approvals.NO_ANSWER if key == NO_ANSWER_KEY else approvals.STOPPED
    tail = _closed(recovery, record, why)
    state = recovery.state.ended(ending(Outcome.STOPPED, key), text=None, usage=recovery.usage)
    await store.finish(
        turn_id,
        recovery.fence,
        Checkpoint(
            turn_id, recovery.usage.iterations, tail, state, recovery.usage, events=[ended(state)]
        ),
    )
    message = "nobody answered its approval in time" if key == NO_ANSWER_KEY else "stopped"
    reporter(_report(recovery, Outcome.STOPPED.value, f"the waiting turn ended: {message}"))
    return True


def _closed(recovery: Recovery, record: ResumeRecord | None, why: str) -> list[Message]:
    if recovery.wire is None or recovery.last_message is None:
        return []
    wire = wire_format(recovery.wire)
    uses = approvals.in_flight([recovery.last_message], wire)
    return wire.tool_results(approvals.closing(record, uses, why)) if uses else []


async def resume_crashed(
    store: Store,
    turn_id: str,
    queue: Enqueue,
    settings: Resuming,
    reporter: Reporter = log_report,
) -> Recovery | None:
    """Queue a turn whose lease expired again, from its last checkpoint, as a new job; None
    once it is. Past `max_resumes`, the recovery it took the turn over with, for the caller
    to finalise through `failed()` (the refusal reported here). None too if it was not
    there to take."""
    taken = await store.take_over(turn_id, EXPIRED)
    if taken is None:
        return None
    record = await store.resume_record(turn_id)
    record = record or ResumeRecord()
    done = record.resumes
    if done >= settings.max_resumes:
        why = f"its worker stopped again after {done} resumes (at most {settings.max_resumes})"
        reporter(_report(taken, "resume_refused", why, logging.ERROR))
        return taken
    state = taken.state.requeued()
    withdrawn = await unsettled(store, taken, unfinished(False).key)  # the next run streams anew
    if withdrawn:
        await store.append_events(turn_id, taken.fence, withdrawn)
    await store.requeue(turn_id, taken.fence, record.requeued(taken.checkpointed), state)
    await queue.enqueue(turn_id)
    message = (
        "its worker stopped; resumed from its last checkpoint"
        f" (resume {done + 1} of at most {settings.max_resumes})"
    )
    reporter(_report(taken, "resumed", message, logging.WARNING))
    return None


def _report(recovery: Recovery, event: str, message: str, level: int = logging.INFO) -> Report:
    return Report(
        turn_id=recovery.turn_id,
        iteration=recovery.usage.iterations,
        event=event,
        message=message,
        level=level,
        usage=recovery.usage,
        conversation_id=recovery.conversation_id,
    )
