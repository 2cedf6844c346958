"""A turn that waits and resumes, as data: the resume record, and what a resumed run gets.

A turn stops its job and continues later in another one, on any worker, in two
cases (docs/design.md §11):

- **approval**: the model asked for a tool that needs a person's yes. The tools
  of that response that need none run first; the turn then checkpoints, is
  published `waiting` with its `approvals`, and its job ends. Once every use is
  decided, the turn is queued again.
- **crash** (opt-in, `resume_after_crash`): the sweeper finds the turn's lease
  expired and queues it again instead of finalising it as `failed`.

Either way the store keeps a **resume record** with the turn (`records.ResumeRecord`):
the last response's tool uses, the results already known, the decisions, the
working time spent so far and how many times a crash resumed the turn. A new job
reads it back (`resume_from`) into a `Resume`: which uses to run now, which to
answer as they are, where the turn's usage and working time stand. The model
is never asked again for a response it gave: its message is in the history.

Pure functions only; the store, the job and the sweeper do the I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..state import Approval
from ..store.records import ResumeRecord
from ..usage import Usage
from ..wire import Message, ToolResult, ToolUse, WireFormat

DECLINED = "The person declined this tool call; {tool} was not run."
INTERRUPTED = (
    "interrupted: {tool} was running when the turn's worker stopped; it may or may not have run"
)
UNDECIDED = "not run: {tool} was waiting for a person's decision"
NO_ANSWER = "not run: nobody approved {tool} in time"
STOPPED = "not run: the person stopped the turn while it waited"


@dataclass(frozen=True, slots=True)
class Resume:
    """What one run of a turn knows about waiting and resuming (default: a fresh turn with
    no tool that needs approval)."""

    needs_approval: frozenset[str] = frozenset()
    """Tools that run only once a person approves the call."""
    checkpoint_tools: bool = False
    """Write a checkpoint before running tools, so a crash loses no response (resume on)."""
    asked: bool = False
    """The history already holds the turn's question: it goes on from there."""
    usage: Usage | None = None
    """The turn's usage so far (its iterations count against the cap)."""
    working: float = 0.0
    """Seconds the turn has worked before this run; waiting is not working."""
    uses: tuple[ToolUse, ...] = ()
    """The last response's tool uses still without results, in order."""
    answered: Mapping[str, ToolResult] = field(default_factory=dict)
    """Results already known for some of `uses`; the others run now."""
    why: str | None = None
    """Why the turn resumed and what was decided, for the trace (None: not resumed)."""

    def gated(self, uses: Sequence[ToolUse]) -> bool:
        """Whether any of `uses` waits for a person's yes."""
        return any(u.name in self.needs_approval for u in uses)

    def ungated(self, uses: Sequence[ToolUse]) -> list[ToolUse]:
        """The uses that need no person's yes: they run before the turn waits."""
        return [u for u in uses if u.name not in self.needs_approval]

    def to_run(self) -> list[ToolUse]:
        """The uses the last response left that run now (approved, or safe to run again)."""
        return [u for u in self.uses if u.id not in self.answered]

    def results(self, ran: Sequence[ToolResult]) -> list[ToolResult]:
        """Every use's result, in order: the known ones and those of `ran` (run in order)."""
        got = {r.tool_use_id: r for r in ran}
        return [self.answered.get(u.id) or got[u.id] for u in self.uses]

    def usage_so_far(self) -> Usage:
        """The usage the run starts from (a fresh turn's is zero)."""
        return Usage() if self.usage is None else self.usage.copy()

    def traced(self) -> Resume | None:
        """What a turn's trace holds of this, so a replay resumes it the same: nothing for
        a fresh turn with no tool that waits."""
        return None if self == Resume() else self

    def to_json(self) -> dict[str, Any]:
        """As a trace file holds it (its `resume`)."""
        return {
            "needs_approval": sorted(self.needs_approval),
            "checkpoint_tools": self.checkpoint_tools,
            "asked": self.asked,
            "usage": None if self.usage is None else self.usage.as_dict(),
            "working": self.working,
            "uses": [u.to_json() for u in self.uses],
            "answered": [r.to_json() for r in self.answered.values()],
            "why": self.why,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Resume:
        usage = data.get("usage")
        answered = (ToolResult.from_json(r) for r in data.get("answered") or ())
        return cls(
            frozenset(data.get("needs_approval") or ()),
            bool(data.get("checkpoint_tools")),
            asked=bool(data.get("asked")),
            usage=None if usage is None else Usage.from_dict(usage),
            working=float(data.get("working") or 0.0),
            uses=tuple(ToolUse.from_json(u) for u in data.get("uses") or ()),
            answered={r.tool_use_id: r for r in answered},
            why=data.get("why"),
        )


def waiting_record(
    uses: Sequence[ToolUse],
    results: Sequence[ToolResult],
    captions: Mapping[str, str],
    working: float,
) -> ResumeRecord:
    """The resume record of a turn that stops to wait: the response's `uses`, the
    `results` of those that ran first (they need no approval), and an `Approval` (with
    the tool's caption key) for each of the others."""
    ran = {r.tool_use_id for r in results}
    waiting = tuple(
        Approval(u.id, u.name, u.input, captions.get(u.name)) for u in uses if u.id not in ran
    )
    return ResumeRecord(True, tuple(uses), tuple(results), waiting, working=working)


def resume_from(
    record: ResumeRecord | None,
    history: Sequence[Message],
    wire: WireFormat,
    usage: Usage,
    *,
    needs_approval: Collection[str] = frozenset(),
    idempotent: Collection[str] = frozenset(),
    checkpoint_tools: bool = False,
) -> Resume:
    """What a job runs a turn with: a fresh turn without a record; else the uses the last
    response left, each answered from the record or to be run now."""
    gate = frozenset(needs_approval)
    if record is None:
        return Resume(gate, checkpoint_tools)
    uses = in_flight(history, wire) if record.asked else ()
    answered = {u.id: r for u in uses if (r := _answer(record, u, idempotent)) is not None}
    return Resume(
        gate,
        checkpoint_tools,
        asked=record.asked,
        usage=usage,
        working=record.working,
        uses=uses,
        answered=answered,
        why=_why(record),
    )


def _why(record: ResumeRecord) -> str:
    """Why a turn resumed, as its trace says: after a crash, or the decisions made."""
    if record.crashed:
        return f"after a crash (resume {record.resumes})"
    said = {True: "approved", False: "denied", None: "undecided"}
    decisions = [f"{a.tool} {said[record.decisions.get(a.tool_use_id)]}" for a in record.approvals]
    return "after approval: " + ", ".join(decisions)


def in_flight(history: Sequence[Message], wire: WireFormat) -> tuple[ToolUse, ...]:
    """The tool uses of the history's last message, if it is a response that asked for some."""
    if not history or history[-1].get("role") != "assistant":
        return ()
    return wire.tool_uses(history[-1])


def known_results(record: ResumeRecord | None) -> dict[str, ToolResult]:
    """The results the record holds, by tool use id."""
    return {r.tool_use_id: r for r in (record.results if record else ())}


def _answer(record: ResumeRecord, use: ToolUse, idempotent: Collection[str]) -> ToolResult | None:
    """The use's answer from the record, or None if it is to run now (approved, or in flight
    after a crash and safe to run again)."""
    known = known_results(record).get(use.id)
    if known is not None:
        return known
    if record.crashed:
        if use.name in idempotent:
            return None
        return ToolResult(use.id, INTERRUPTED.format(tool=use.name), True)
    decision = record.decisions.get(use.id)
    if decision is True:
        return None
    why = DECLINED if decision is False else UNDECIDED
    return ToolResult(use.id, why.format(tool=use.name), True)


def closing(record: ResumeRecord | None, uses: Sequence[ToolUse], why: str) -> list[ToolResult]:
    """Results for every use of a turn that ends while it waits: the known ones, else `why`."""
    known = known_results(record)
    return [known.get(u.id) or ToolResult(u.id, why.format(tool=u.name), True) for u in uses]
