"""The values a store writes and hands back: a turn's records, as data.

`Checkpoint` and `ModelCall` are what the loop's hooks give the store to write;
`Turn`, `TurnStart`, `Guard`, `ConversationSummary` and `Recovery` are what the
store reads back. This module imports only the state, usage and wire types, so
the store (`store/`) sits below the loop: nothing it imports leads to the
hooks, the trace, the loop, the job or a provider (`tests/test_imports.py`
holds it there). What a record means to the trace file is `trace.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from ..state import Approval, Decided, PublishedState
from ..usage import Usage
from ..wire import Json, Message, ToolResult, ToolUse


class EventType(StrEnum):
    """What one event of a turn's event log says (docs/design.md, "The event log and
    the stream"); the comment after each is its body."""

    TURN_STARTED = "turn.started"
    """`{}`: the first event of every run of the turn (a resumed run too)."""
    TEXT_DELTA = "text.delta"
    """`{"delta", "message"}`: answer text as it arrives, for the bot bubble `message`."""
    TEXT_RETRACTED = "text.retracted"
    """`{"message", "key"}`: the text streamed into `message` never stands; `key` is the
    notice the turn shows instead."""
    TOOL_STARTED = "tool.started"
    """`{"tool_use_id", "tool", "input"}`."""
    TOOL_ENDED = "tool.ended"
    """`{"tool_use_id", "is_error", "output"}`: the result's text as the model sees it,
    redacted like the history, cut to 4,000 characters."""
    ACTIVITY = "activity"
    """`{"key"}`: the caption's message key."""
    CARD = "card"
    """`{"card", "message"}`: a tool's card, and the bubble it becomes."""
    APPROVAL_REQUESTED = "approval.requested"
    """`{"approvals": [...]}`: the tool uses waiting for a person's yes."""
    TURN_WAITING = "turn.waiting"
    """`{}`: the last event of a run that waits for a person."""
    TURN_ENDED = "turn.ended"
    """`{"status", "outcome", "usage"}`: the last event of the turn."""


EventBody = dict[str, Json]
"""An event's body: a JSON object, as the event's type says (`EventType`)."""

NewEvent = tuple[EventType, EventBody]
"""An event not yet written: its type and JSON body (the store gives it its number)."""

LAST_EVENTS = frozenset({EventType.TURN_ENDED, EventType.TURN_WAITING})
"""The events after which a run writes nothing more: a stream ends after one."""


@dataclass(frozen=True, slots=True)
class TurnEvent:
    """One event of a turn's log, as the store keeps it: numbered per turn from 1, with no
    gaps, across every run of the turn."""

    seq: int
    type: EventType
    body: EventBody

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "type": self.type.value, "body": self.body}


@dataclass(slots=True)
class ModelCall:
    """One model call as recorded: what the trace replays and the store keeps per iteration.
    Filled in as its call goes on (`turn/call_log.py`); once handed to a write or the call
    is over, never changed (what comes in later goes into a copy). Not frozen: a frozen
    dataclass sets each of these fields through `object.__setattr__`, which made building
    it most of a model call's bookkeeping."""

    iteration: int
    started: float
    timeout: float
    duration: float = 0.0
    response: Json = None
    error: dict[str, Any] | None = None
    stop_reason: str | None = None
    tools: list[str] | None = None
    decision: str | None = None
    caption: str | None = None
    tools_duration: float | None = None
    usage: Usage | None = None
    """This call's usage, priced when its model's price is known."""
    model: str | None = None
    """The model that answered (the response's `model`), else the one requested."""
    stopped: bool = False
    """A stop aborted the call: it has no response, and its tokens are not counted."""
    resumed: str | None = None
    """The turn resumed in a new job just before this call: why (after an approval, or
    a crash), and what was decided."""
    streamed: bool = False
    """The provider streamed the call's answer text as it arrived (`trace show` marks it)."""
    compacted: str | None = None
    """What was compacted just before this call (tool results cleared, turns summarised)."""

    def summary(self) -> dict[str, Any]:
        """What `trace show` prints for the call, as the store keeps it with the turn
        (with the model, the cost and the prompt cache's tokens when there are any)."""
        usage = self.usage or Usage()
        summary = {
            "iteration": self.iteration,
            "stop_reason": self.stop_reason,
            "error": None if self.error is None else self.error.get("message"),
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "seconds": round(self.duration, 3),
            "tools": list(self.tools or ()),
            "caption": self.caption,
            "decision": self.decision,
        }
        if self.error is not None:
            summary["error_type"] = self.error.get("kind")
        if usage.cache_creation_input_tokens or usage.cache_read_input_tokens:
            summary["cache_creation_input_tokens"] = usage.cache_creation_input_tokens
            summary["cache_read_input_tokens"] = usage.cache_read_input_tokens
        if self.tools_duration is not None:
            summary["tools_seconds"] = round(self.tools_duration, 3)
        if self.model is not None:
            summary["model"] = self.model
        if self.resumed is not None:
            summary["resumed"] = self.resumed
        if self.streamed:
            summary["streamed"] = True
        if self.compacted is not None:
            summary["compacted"] = self.compacted
        if usage.cost_usd is not None:
            summary["cost_usd"] = usage.cost_usd
        return summary


@dataclass(slots=True)
class Checkpoint:
    """One write: what changed since the previous one, and the state that follows it.

    Enough to recover a turn that dies, and, when `state.done`, the final write.
    Not frozen only because it is built every iteration and a frozen dataclass's
    `__init__` costs several times more; nobody changes one once built."""

    turn_id: str
    iteration: int
    appended: Sequence[Message]
    """The messages added to the history since the previous write."""
    state: PublishedState
    usage: Usage
    calls: Sequence[ModelCall] = ()
    """The model calls made since the previous write."""
    events: Sequence[NewEvent] = ()
    """The turn's events since the previous write, written in the same transaction."""
    compacted: Compacted | None = None
    """The conversation's new compaction record, when the turn compacted since the previous
    write: kept in the same transaction."""


@dataclass(frozen=True, slots=True)
class Compacted:
    """A compaction of a conversation: what its next request is built from (docs/design.md
    §2, "Compaction"). The verbatim history is kept whole; a request is `summary` (when
    there is one) as the first message, then the history from message `reach` on, each
    tool result in a message before `cleared` sent as a short placeholder."""

    reach: int = 0
    """How many of the history's first messages `summary` stands for."""
    cleared: int = 0
    """Tool results in the messages before this one are cleared (sent as placeholders)."""
    summary: str | None = None
    """The summary of the history's first `reach` messages (and of every summary before)."""
    turns: int = 0
    """How many turns the summary stands for."""
    window: int | None = None
    """The model's window as a refusal stated it (the next turns compact before it), if
    one did."""

    def to_json(self) -> dict[str, Any]:
        return {
            "reach": self.reach,
            "cleared": self.cleared,
            "summary": self.summary,
            "turns": self.turns,
            "window": self.window,
        }

    @classmethod
    def from_json(cls, data: Any) -> Compacted:
        """Read back what `to_json()` wrote; a field that is not what it should be is 0 or None."""
        data = data if isinstance(data, dict) else {}
        summary = data.get("summary")
        return cls(
            reach=_whole(data.get("reach")),
            cleared=_whole(data.get("cleared")),
            summary=summary if isinstance(summary, str) else None,
            turns=_whole(data.get("turns")),
            window=_whole(data.get("window")) or None,
        )


def _whole(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


@dataclass(frozen=True, slots=True)
class Turn:
    """A turn as the store holds it."""

    turn_id: str
    conversation_id: str
    question: str
    version: int
    """The last version published."""
    message_offset: int
    """How many published messages the conversation's earlier turns hold."""
    done: bool
    user: str | None = None
    """The application's id of the user who asked it (None: asked with the token alone)."""
    locale: str = "en"
    """The asking reader's locale."""
    owner: Owner | None = None
    """The assistant that queued it (None: queued before turns recorded one)."""
    fate: Fate | None = None
    """The settings it was queued with (None: the running process's own apply)."""


@dataclass(frozen=True, slots=True)
class Owner:
    """The assistant a turn belongs to: its name, which a worker of that assistant claims it
    by, and its version (`Assistant.owner`: a hash of its tools and settings, or the one it
    pins), which says whether the worker runs the code that queued it."""

    assistant: str
    version: str

    def __str__(self) -> str:
        return f"{self.assistant!r} (version {self.version})"


@dataclass(frozen=True, slots=True)
class Fate:
    """The settings that decide what happens to a turn, recorded when it is queued so that
    whichever process runs, sweeps or ends it applies the same: whether a crash resumes it
    (and how often), how long it may wait for a person, and its budget."""

    resume_after_crash: bool = False
    max_resumes: int = 2
    approval_timeout: float = 24 * 3600.0
    budget: Mapping[str, float] = field(default_factory=dict)
    """`Budget.as_dict()` (the store knows no `Budget`; the job makes one of it)."""

    def to_json(self) -> dict[str, Any]:
        """As the turn's `fate` column keeps it."""
        return {
            "resume_after_crash": self.resume_after_crash,
            "max_resumes": self.max_resumes,
            "approval_timeout": self.approval_timeout,
            "budget": dict(self.budget),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fate:
        """Read back what `to_json` wrote."""
        return cls(
            bool(data["resume_after_crash"]),
            int(data["max_resumes"]),
            float(data["approval_timeout"]),
            dict(data["budget"]),
        )


@dataclass(frozen=True, slots=True)
class TurnStart:
    """What a job starts a claimed turn from (`Store.start`): the turn, and its state as
    last published."""

    turn: Turn
    state: PublishedState


@dataclass(frozen=True, slots=True)
class Guard:
    """What guards a conversation: its token's hash, and the user who owns it."""

    token_hash: str
    owner: str | None
    """The application's id of the user who owns it (None: the token alone guards it)."""


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """One of an owner's conversations, as `Store.conversations` lists it."""

    conversation_id: str
    created: float
    """When it was created (Unix seconds)."""
    title: str | None
    """Its first turn's question (None before any turn)."""


@dataclass(frozen=True, slots=True)
class TranscriptPage:
    """A run of a conversation's messages, oldest first, as the store reads it."""

    first: int
    """The index of its first message among all the conversation's (0 = the oldest)."""
    messages: list[dict[str, Any]]
    """Each in its published form, with its turn's `turn_id`."""
    ratings: dict[str, str] = field(default_factory=dict)
    """The reader's rating (`up`, `down`) of each of its turns that has one, as last given,
    by turn id."""


def transcript_page(
    rows: Sequence[Sequence[Any]], before: int | None, load: Callable[[Any], Any]
) -> TranscriptPage:
    """The page the `paged` rows make (`i, body, turn_id, feedback`; `load` reads the
    database's JSON); an empty one starts where it was asked to end."""
    if not rows:
        return TranscriptPage(before or 0, [])
    given = {turn: feedback for _, _, turn, feedback in rows if feedback is not None}
    ratings = {str(turn): str(load(feedback)["rating"]) for turn, feedback in given.items()}
    messages = [{**load(body), "turn_id": turn} for _, body, turn, _ in rows]
    return TranscriptPage(int(rows[0][0]), messages, ratings)


@dataclass(frozen=True, slots=True)
class Recovery:
    """What `take_over` hands back (and `end_turn` reads): the turn's row as its last
    checkpoint left it."""

    turn_id: str
    conversation_id: str
    fence: int
    question: str
    wire: str | None
    """The wire format the worker's provider wrote the history in (None if never claimed)."""
    version: int
    """The highest version published or checkpointed."""
    message_offset: int
    state: PublishedState
    """The turn's state as last written: its last checkpoint's, or the state published
    when it started if it has none; at the highest version published or checkpointed."""
    checkpointed: bool
    """A checkpoint wrote the turn's row: its history holds the question."""
    last_message: Message | None
    """The last history message this turn stored, if any."""
    usage: Usage = field(default_factory=Usage)
    """Usage as last recorded (after the last model call that returned)."""


@dataclass(frozen=True, slots=True)
class Taken:
    """What `end_turn` read of a turn it took over, in the transaction that ends it: the row
    as its last checkpoint left it, its resume record, and its cancel flag."""

    recovery: Recovery
    record: ResumeRecord | None
    cancel: bool
    """The turn's cancel was requested (a Stop came) before it was taken over."""
    streamed: Sequence[TurnEvent] = ()
    """Its log's text deltas and retractions, in order: what it streamed and never showed
    is retracted as it ends (`turn/events.unsettled`)."""


@dataclass(frozen=True, slots=True)
class Ended:
    """A turn `end_turn` took over and ended in one transaction: what it read, and the final
    write it made of that."""

    taken: Taken
    final: Checkpoint


@dataclass(frozen=True, slots=True)
class ResumeRecord:
    """What the store keeps of a turn that waits or resumes (`turns.resume`, approvals.py):
    the last response's tool uses, the results already known, the uses waiting for a
    person and the decisions made, the working time so far, and the crashes it resumed
    from. `to_json()` is the column's JSON."""

    asked: bool = False
    """The history holds the turn's question: a resumed job goes on from there."""
    uses: tuple[ToolUse, ...] = ()
    results: tuple[ToolResult, ...] = ()
    """Results of the uses that ran before the wait (they needed no approval)."""
    approvals: tuple[Approval, ...] = ()
    """The uses that wait for a person's yes, as published."""
    decisions: Mapping[str, bool] = field(default_factory=dict)
    """A person's decision on each decided use, by its id: approved or not."""
    working: float = 0.0
    """Seconds the turn has worked so far; waiting is not working."""
    resumes: int = 0
    """How many times a crash has resumed the turn."""
    crashed: bool = False
    """It was queued again after its worker stopped (not after a decision)."""

    def undecided(self) -> tuple[Approval, ...]:
        return tuple(a for a in self.approvals if a.tool_use_id not in self.decisions)

    def with_decision(self, tool_use_id: str, approved: bool) -> ResumeRecord | None:
        """The record once `tool_use_id` is decided; None if it does not wait for that use."""
        if all(a.tool_use_id != tool_use_id for a in self.undecided()):
            return None
        return replace(self, decisions={**self.decisions, tool_use_id: approved})

    def requeued(self, asked: bool) -> ResumeRecord:
        """The record of a turn queued again after a crash: one more resume."""
        return replace(self, resumes=self.resumes + 1, crashed=True, asked=self.asked or asked)

    def to_json(self) -> dict[str, Any]:
        return {
            "asked": self.asked,
            "uses": [u.to_json() for u in self.uses],
            "results": [r.to_json() for r in self.results],
            "approvals": [
                {**a.to_json(), "approved": self.decisions.get(a.tool_use_id)}
                for a in self.approvals
            ],
            "working": self.working,
            "resumes": self.resumes,
            "crashed": self.crashed,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ResumeRecord:
        approvals = data.get("approvals") or ()
        return cls(
            asked=bool(data.get("asked")),
            uses=tuple(ToolUse.from_json(u) for u in data.get("uses") or ()),
            results=tuple(ToolResult.from_json(r) for r in data.get("results") or ()),
            approvals=tuple(Approval.from_json(a) for a in approvals),
            decisions={
                str(a["tool_use_id"]): bool(a["approved"])
                for a in approvals
                if a.get("approved") is not None
            },
            working=float(data.get("working") or 0.0),
            resumes=int(data.get("resumes") or 0),
            crashed=bool(data.get("crashed")),
        )


def decision_made(
    record: ResumeRecord, state: PublishedState, tool_use_id: str, approved: bool
) -> tuple[ResumeRecord, PublishedState] | None:
    """The record and the state (one version on) once a person decided `tool_use_id`; None
    if the turn does not wait for that use. The state stays `waiting` with the uses left,
    and is `queued` once every one is decided."""
    made = record.with_decision(tool_use_id, approved)
    if made is None:
        return None
    use = next(a for a in record.approvals if a.tool_use_id == tool_use_id)
    decided = Decided.of(use, approved)
    return made, state.after_decision(made.undecided(), decided)
