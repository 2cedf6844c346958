"""A turn that waits and resumes, as data: the resume record, and what a resumed run gets.

A turn stops its job and continues later in another one, on any worker, in two
cases (docs/design.md §11):

- **approval**: the model asked for a tool that needs a person's yes. The tools
  of that response that need none run first; the turn then checkpoints, is
  published `waiting` with its `approvals`, and its job ends. Once every use is
  decided, the turn is queued again.
- **crash** (opt-in, `resume_after_crash`): the sweeper finds the turn's lease
  expired and queues it again instead of finalising it as `failed`.

Either way the store keeps a **resume record** with the turn (`Parked.to_json()`):
the last response's tool uses, the results already known, the decisions, the
working time spent so far and how many times a crash resumed the turn. A new job
reads it back (`resume_from`) into a `Resume`: which uses to run now, which to
answer as they are, where the turn's usage and working time stand. The model
is never asked again for a response it gave: its message is in the history.

Pure functions only; the store, the job and the sweeper do the I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .cards import Card
from .outcomes import Status
from .state import PublishedState
from .usage import Usage
from .wire import Message, ToolResult, ToolUse, WireFormat

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

    def to_run(self) -> list[ToolUse]:
        return [u for u in self.uses if u.id not in self.answered]

    def results(self, ran: Sequence[ToolResult]) -> list[ToolResult]:
        """Every use's result, in order: the known ones and those of `ran` (run in order)."""
        got = {r.tool_use_id: r for r in ran}
        return [self.answered.get(u.id) or got[u.id] for u in self.uses]

    def traced(self) -> dict[str, Any]:
        """What a turn's trace holds of this, so a replay resumes it the same: nothing for
        a fresh turn with no tool that waits."""
        if self == Resume():
            return {}
        return {
            "resume": {
                "needs_approval": sorted(self.needs_approval),
                "checkpoint_tools": self.checkpoint_tools,
                "asked": self.asked,
                "usage": None if self.usage is None else self.usage.as_dict(),
                "working": self.working,
                "uses": [_use_json(u) for u in self.uses],
                "answered": [_result_json(r) for r in self.answered.values()],
                "why": self.why,
            }
        }

    @classmethod
    def from_trace(cls, trace: Mapping[str, Any]) -> Resume | None:
        data = trace.get("resume")
        if not isinstance(data, dict):
            return None
        usage = data.get("usage")
        answered = (_result(r) for r in data.get("answered") or ())
        return cls(
            frozenset(data.get("needs_approval") or ()),
            bool(data.get("checkpoint_tools")),
            asked=bool(data.get("asked")),
            usage=None if usage is None else Usage.from_dict(usage),
            working=float(data.get("working") or 0.0),
            uses=tuple(ToolUse(u["id"], u["name"], u["input"]) for u in data.get("uses") or ()),
            answered={r.tool_use_id: r for r in answered},
            why=data.get("why"),
        )


@dataclass(frozen=True, slots=True)
class Parked:
    """What a turn that stops to wait for approval writes: its resume record."""

    uses: tuple[ToolUse, ...]
    results: tuple[ToolResult, ...]
    """Results of the uses that needed no approval (they ran first)."""
    approvals: tuple[dict[str, Any], ...]
    """`{"tool_use_id", "tool", "input", "key"}` per use that waits, as published."""
    working: float

    @classmethod
    def of(
        cls,
        uses: Sequence[ToolUse],
        results: Sequence[ToolResult],
        captions: Mapping[str, str],
        working: float,
    ) -> Parked:
        ran = {r.tool_use_id for r in results}
        waiting = tuple(
            {"tool_use_id": u.id, "tool": u.name, "input": u.input, "key": captions.get(u.name)}
            for u in uses
            if u.id not in ran
        )
        return cls(tuple(uses), tuple(results), waiting, working)

    def state(
        self,
        state: PublishedState,
        text: str | None,
        usage: Usage,
        cards: Sequence[Card],
    ) -> PublishedState:
        """The published state of the waiting turn: `waiting`, not done, with `approvals`, and
        no caption (the response's would say, in the past tense, what has not happened)."""
        iterated = state.iterated(None, text, usage, tuple(cards))
        return dataclasses.replace(iterated, status=Status.WAITING.value, approvals=self.approvals)

    def to_json(self, resumes: int = 0) -> dict[str, Any]:
        return {
            "asked": True,
            "uses": [_use_json(u) for u in self.uses],
            "results": [_result_json(r) for r in self.results],
            "approvals": [{**a, "approved": None} for a in self.approvals],
            "working": self.working,
            "resumes": resumes,
            "crashed": False,
        }


def decided(
    record: dict[str, Any], bare: dict[str, Any], tool_use_id: str, approved: bool
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The record and published state (without messages) once `tool_use_id` is decided;
    None if the turn is not waiting for that use. The state is `queued` once every use
    waiting for a person is decided, else still `waiting` with the others' approvals."""
    approvals = [dict(a) for a in record.get("approvals") or ()]
    for a in approvals:
        if a.get("tool_use_id") == tool_use_id and a.get("approved") is None:
            a["approved"] = bool(approved)
            break
    else:
        return None
    left = [_published(a) for a in approvals if a.get("approved") is None]
    state = {**bare, "version": int(bare["version"]) + 1}
    state.pop("approvals", None)
    if left:
        state["approvals"] = left
    else:
        state["status"] = Status.QUEUED.value
    return {**record, "approvals": approvals}, state


def requeued(record: dict[str, Any] | None, asked: bool) -> dict[str, Any]:
    """The record of a turn queued again after a crash: one more resume, its tools in flight."""
    record = dict(record or {})
    record["resumes"] = int(record.get("resumes") or 0) + 1
    record["crashed"] = True
    record["asked"] = bool(record.get("asked")) or asked
    return record


def resumes(record: dict[str, Any] | None) -> int:
    return int((record or {}).get("resumes") or 0)


def resume_from(
    record: dict[str, Any] | None,
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
    asked = bool(record.get("asked"))
    uses = in_flight(history, wire) if asked else ()
    answered = {u.id: r for u in uses if (r := _answer(record, u, idempotent)) is not None}
    return Resume(
        gate,
        checkpoint_tools,
        asked=asked,
        usage=usage,
        working=float(record.get("working") or 0.0),
        uses=uses,
        answered=answered,
        why=_why(record),
    )


def _why(record: dict[str, Any]) -> str:
    """Why a turn resumed, as its trace says: after a crash, or the decisions made."""
    if record.get("crashed"):
        return f"after a crash (resume {resumes(record)})"
    said = {True: "approved", False: "denied", None: "undecided"}
    decisions = [
        f"{a.get('tool')} {said[a.get('approved')]}" for a in record.get("approvals") or ()
    ]
    return "after approval: " + ", ".join(decisions)


def in_flight(history: Sequence[Message], wire: WireFormat) -> tuple[ToolUse, ...]:
    """The tool uses of the history's last message, if it is a response that asked for some."""
    if not history or history[-1].get("role") != "assistant":
        return ()
    return wire.tool_uses(history[-1])


def known_results(record: dict[str, Any] | None) -> dict[str, ToolResult]:
    """The results the record holds, by tool use id."""
    return {r.tool_use_id: r for r in map(_result, (record or {}).get("results") or ())}


def _answer(record: dict[str, Any], use: ToolUse, idempotent: Collection[str]) -> ToolResult | None:
    """The use's answer from the record, or None if it is to run now (approved, or in flight
    after a crash and safe to run again)."""
    known = known_results(record).get(use.id)
    if known is not None:
        return known
    decision = next(
        (a.get("approved") for a in record.get("approvals") or () if a["tool_use_id"] == use.id),
        None,
    )
    if record.get("crashed"):
        if use.name in idempotent:
            return None
        return ToolResult(use.id, INTERRUPTED.format(tool=use.name), True)
    if decision is True:
        return None
    why = DECLINED if decision is False else UNDECIDED
    return ToolResult(use.id, why.format(tool=use.name), True)


def closing(record: dict[str, Any] | None, uses: Sequence[ToolUse], why: str) -> list[ToolResult]:
    """Results for every use of a turn that ends while it waits: the known ones, else `why`."""
    known = known_results(record)
    return [known.get(u.id) or ToolResult(u.id, why.format(tool=u.name), True) for u in uses]


def _published(approval: dict[str, Any]) -> dict[str, Any]:
    return {k: approval.get(k) for k in ("tool_use_id", "tool", "input", "key")}


def _use_json(use: ToolUse) -> dict[str, Any]:
    return {"id": use.id, "name": use.name, "input": use.input}


def _result_json(result: ToolResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "tool_use_id": result.tool_use_id,
        "content": result.content,
        "is_error": result.is_error,
    }
    if result.card is not None:
        out["card"] = result.card.to_json()
    return out


def _result(data: dict[str, Any]) -> ToolResult:
    card = Card.from_json(data["card"]) if data.get("card") is not None else None
    return ToolResult(data["tool_use_id"], data["content"], bool(data.get("is_error")), card)
