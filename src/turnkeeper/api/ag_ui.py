"""AG-UI 1.0 (`POST /api/ag-ui`) as a projection of the turn's event log.

`AgUiRun` is pure: fed turnkeeper's events (`store.records.TurnEvent`) in
order, it gives the AG-UI events (the `ag-ui-protocol` package's own types)
one run of the protocol sends. docs/design.md maps each protocol event to
the turnkeeper events it comes from:

- `text.delta` → `TEXT_MESSAGE_START` (first delta of a bubble),
  `TEXT_MESSAGE_CONTENT`; the bubble's `TEXT_MESSAGE_END` comes before any
  other kind of event.
- `tool.started` → `TOOL_CALL_START`, `TOOL_CALL_ARGS` (the input as JSON),
  `TOOL_CALL_END`; `tool.ended` → `TOOL_CALL_RESULT`.
- `activity` → `ACTIVITY_SNAPSHOT` (`activityType: "caption"`), its text
  resolved in the reader's locale by the caller's `resolve`; `card` →
  `ACTIVITY_SNAPSHOT` (`activityType: "card"`); a waiting notice's caption is
  replaced with none (`key: null`) at the `turn.started` of the run a worker took.
- `approval.requested` → the uses' tool calls, if not yet announced;
  `turn.waiting` → `RUN_FINISHED` with an `interrupt` outcome, one interrupt
  per use (`reason: "tool_call"`).
- `text.retracted` → `MESSAGES_SNAPSHOT`: the conversation without the
  withdrawn text.
- `turn.ended` → `RUN_FINISHED` (`finished`: success; `stopped`:
  `cancelled`) or `RUN_ERROR {message, code}`, the notice in the reader's
  language and the outcome as the code.

Events before the run's cursor are fed with `shown=False`: they only teach the
projection what the client already saw (tool calls announced, interrupts).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    ActivitySnapshotEvent,
    AssistantMessage,
    BaseEvent,
    FunctionCall,
    Interrupt,
    Message,
    MessagesSnapshotEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)

from ..outcomes import Outcome, ending
from ..service.sweeper import WAITING_FOR_WORKER
from ..store.records import EventType, TurnEvent

Resolve = Callable[[str], str]
"""A message key's text in the reader's locale (the key itself when it has none)."""

APPROVAL = "ui.approval_unknown"
"""What an interrupt says when the approval has no key of its own: `Use the tool {tool}`."""


def interrupt_id(turn_id: str, tool_use_id: str) -> str:
    """The id of the interrupt that waits for a decision on one tool use of a turn."""
    return f"{turn_id}:{tool_use_id}"


def parse_interrupt(an_id: str) -> tuple[str, str] | None:
    """The turn and tool use an interrupt id names; None if it names none."""
    turn_id, colon, tool_use_id = an_id.partition(":")
    return (turn_id, tool_use_id) if colon and turn_id and tool_use_id else None


def transcript_messages(bubbles: Sequence[Mapping[str, Any]]) -> list[Message]:
    """The published transcript's text bubbles as AG-UI messages (notices and cards left
    out: they are not conversation content)."""
    out: list[Message] = []
    for bubble in bubbles:
        text = bubble.get("text")
        if not isinstance(text, str):
            continue
        if bubble.get("role") == "user":
            out.append(UserMessage(id=str(bubble["id"]), content=text))
        else:
            out.append(AssistantMessage(id=str(bubble["id"]), content=text))
    return out


@dataclass
class AgUiRun:
    """One AG-UI run over one turn's events; see the module docstring."""

    thread_id: str
    run_id: str
    turn_id: str
    resolve: Resolve
    history: list[Message] = field(default_factory=list)
    """The conversation as the server holds it before this run's events: what a
    `MESSAGES_SNAPSHOT` starts from."""
    _open: str | None = None
    _texts: dict[str, str] = field(default_factory=dict)
    _announced: dict[str, ToolCall] = field(default_factory=dict)
    _results: dict[str, str] = field(default_factory=dict)
    _asked: list[Mapping[str, Any]] = field(default_factory=list)
    _caption: str | None = None
    _retracted: str | None = None

    def started(self) -> list[BaseEvent]:
        """What the run sends first."""
        return [RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)]

    def feed(self, event: TurnEvent, shown: bool = True) -> list[BaseEvent]:
        """The AG-UI events one turnkeeper event becomes (none if not `shown`: it was
        sent before this run's cursor, and only updates what the run knows)."""
        out = self._map(event)
        return out if shown else []

    def snapshotted(self) -> BaseEvent:
        """The conversation as the server holds it now (`snapshot()`), as one event."""
        return MessagesSnapshotEvent(messages=self.snapshot())

    def finished(self) -> list[BaseEvent]:
        """A run that follows no turn: done at once."""
        return [
            RunFinishedEvent(
                thread_id=self.thread_id, run_id=self.run_id, outcome=RunFinishedSuccessOutcome()
            )
        ]

    def error(self, message: str, code: str) -> list[BaseEvent]:
        """A run that cannot go on: its open text closed, then `RUN_ERROR`."""
        return [*self._close(), RunErrorEvent(message=message, code=code)]

    # ---- the mapping ------------------------------------------------------

    def _map(self, event: TurnEvent) -> list[BaseEvent]:
        body, kind = event.body, event.type
        if kind is EventType.TEXT_DELTA:
            return self._delta(str(body["message"]), str(body["delta"]))
        if kind is EventType.TURN_STARTED:  # a worker took it: no more waiting for one
            self._asked = []
            return [self._activity(None)] if self._caption == WAITING_FOR_WORKER else []
        return [*self._close(), *self._tools(kind, body), *self._run(kind, body)]

    def _tools(self, kind: EventType, body: Mapping[str, Any]) -> list[BaseEvent]:
        if kind is EventType.TOOL_STARTED:
            return self._call(str(body["tool_use_id"]), str(body["tool"]), body.get("input"))
        if kind is EventType.TOOL_ENDED:
            return [self._result(str(body["tool_use_id"]), str(body["output"]))]
        if kind is EventType.APPROVAL_REQUESTED:
            return self._approvals(body.get("approvals") or [])
        return []

    def _run(self, kind: EventType, body: Mapping[str, Any]) -> list[BaseEvent]:
        if kind is EventType.ACTIVITY:
            return [self._activity(str(body["key"]))]
        if kind is EventType.CARD:
            return [_card(body)]
        if kind is EventType.TEXT_RETRACTED:
            return [self._retract(str(body["message"]), str(body.get("key") or ""))]
        if kind is EventType.TURN_WAITING:
            return [self._interrupted()]
        if kind is EventType.TURN_ENDED:
            return [self._ended(str(body["outcome"]))]
        return []

    def _delta(self, message: str, delta: str) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if self._open != message:
            out += self._close()
            self._open = message
            self._texts.setdefault(message, "")
            out.append(TextMessageStartEvent(message_id=message, role="assistant"))
        self._texts[message] += delta
        if delta:
            out.append(TextMessageContentEvent(message_id=message, delta=delta))
        return out

    def _close(self) -> list[BaseEvent]:
        if self._open is None:
            return []
        message, self._open = self._open, None
        return [TextMessageEndEvent(message_id=message)]

    def _call(self, tool_use_id: str, tool: str, given: Any) -> list[BaseEvent]:
        if tool_use_id in self._announced:
            return []
        arguments = json.dumps(given if given is not None else {}, ensure_ascii=False)
        self._announced[tool_use_id] = ToolCall(
            id=tool_use_id, function=FunctionCall(name=tool, arguments=arguments)
        )
        return [
            ToolCallStartEvent(tool_call_id=tool_use_id, tool_call_name=tool),
            ToolCallArgsEvent(tool_call_id=tool_use_id, delta=arguments),
            ToolCallEndEvent(tool_call_id=tool_use_id),
        ]

    def _result(self, tool_use_id: str, output: str) -> BaseEvent:
        self._results[tool_use_id] = output
        return ToolCallResultEvent(
            message_id=f"{tool_use_id}.result", tool_call_id=tool_use_id, content=output
        )

    def _activity(self, key: str | None) -> BaseEvent:
        """The caption's snapshot, replaced in place; no key: cleared."""
        self._caption = key
        return ActivitySnapshotEvent(
            message_id=f"{self.turn_id}.activity",
            activity_type="caption",
            content={"key": key, "text": "" if key is None else self.resolve(key)},
            replace=True,
        )

    def _approvals(self, approvals: Sequence[Mapping[str, Any]]) -> list[BaseEvent]:
        self._asked = list(approvals)
        out: list[BaseEvent] = []
        for approval in approvals:
            tool = str(approval.get("tool") or "")
            out += self._call(str(approval["tool_use_id"]), tool, approval.get("input"))
        return out

    def _interrupted(self) -> BaseEvent:
        interrupts = [
            Interrupt(
                id=interrupt_id(self.turn_id, str(a["tool_use_id"])),
                reason="tool_call",
                tool_call_id=str(a["tool_use_id"]),
                message=self._asking(a),
            )
            for a in self._asked
        ]
        if not interrupts:  # a wait always names its uses; never an empty interrupt
            return RunErrorEvent(message=self.resolve("errors.ai_failed"), code="failed")
        return RunFinishedEvent(
            thread_id=self.thread_id,
            run_id=self.run_id,
            outcome=RunFinishedInterruptOutcome(interrupts=interrupts),
        )

    def _asking(self, approval: Mapping[str, Any]) -> str:
        """What the use asks, as the widget's card says it: the tool's ask text (never its
        past-tense caption), else `ui.approval_unknown` naming the tool."""
        ask = approval.get("ask")
        said = self.resolve(ask) if isinstance(ask, str) and ask else None
        if said and said != ask:
            return said
        return self.resolve(APPROVAL).replace("{tool}", str(approval.get("tool") or ""))

    def _retract(self, message: str, key: str) -> BaseEvent:
        self._texts.pop(message, None)
        self._retracted = key or None
        return MessagesSnapshotEvent(messages=self.snapshot())

    def snapshot(self) -> list[Message]:
        """The conversation as the server holds it now: the history, then this run's
        answer text and tool calls (withdrawn text left out)."""
        messages: list[Message] = list(self.history)
        known = {m.id for m in messages}
        calls = list(self._announced.values())
        if calls:
            messages.append(
                AssistantMessage(id=f"{self.turn_id}.calls", tool_calls=calls, content=None)
            )
        for call in calls:
            if call.id in self._results:
                messages.append(
                    ToolMessage(
                        id=f"{call.id}.result", tool_call_id=call.id, content=self._results[call.id]
                    )
                )
        for message, text in self._texts.items():
            if message not in known and text:
                messages.append(AssistantMessage(id=message, content=text))
        return messages

    def _ended(self, outcome: str) -> BaseEvent:
        if outcome == Outcome.FINISHED:
            return RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                outcome=RunFinishedSuccessOutcome(),
            )
        if outcome == Outcome.STOPPED:
            return RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                outcome=RunFinishedCancelledOutcome(),
            )
        return RunErrorEvent(message=self.resolve(notice(outcome, self._retracted)), code=outcome)


def notice(outcome: str, retracted: str | None) -> str:
    """The key of the notice a turn that ended `outcome` shows: the retracted text's, else
    the outcome's own."""
    if retracted:
        return retracted
    try:
        return ending(Outcome(outcome)).key or "errors.ai_failed"
    except ValueError:
        return "errors.ai_failed"


def _card(body: Mapping[str, Any]) -> BaseEvent:
    card = body.get("card")
    return ActivitySnapshotEvent(
        message_id=str(body.get("message") or "card"),
        activity_type="card",
        content=card if isinstance(card, dict) else {"card": card},
        replace=True,
    )
