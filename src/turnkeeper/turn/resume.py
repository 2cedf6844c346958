"""Waiting and resuming: an assistant's settings for turns that wait and resume.

The data and the pure decisions are `approvals.py`'s; the exits (`lifecycle.py`):

    waiting ──decide (all)──▶ queued ──▶ a new job resumes it (approvals.py)
       │ Stop, or no answer within `approval_timeout`
       └──────────────▶ lifecycle.stop_waiting(): `stopped`, its tool uses answered
    running, lease expired ──resume_after_crash──▶ lifecycle.resume_crashed(): queued
       again (at most `max_resumes` times; then ended `failed`, reported)

A resumed turn is a new job: nothing is retried by a queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..store.records import ResumeRecord
from ..usage import Usage
from ..wire import Message, WireFormat
from .approvals import Resume, resume_from

DAY = 24 * 3600.0


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
