"""The AI SDK's UI message stream v1 (`POST /api/chat`) as a projection of the event log.

`UiStream` is pure: fed turnkeeper's events in order, it gives the stream's
parts (JSON objects, as `ai`'s `uiMessageChunkSchema` validates them). The
turn is one assistant UI message, its id the turn's; each model call is one
step. docs/design.md maps each part to the turnkeeper events it comes from:

- `turn.started` → `start` (once per response);
- the first event of a model call → `start-step`; a call's tools all ended,
  the turn waiting or ending → `finish-step`;
- `text.delta` → `text-start` (first delta of a bubble), `text-delta`; the
  bubble's `text-end` comes before any other kind of event;
- `tool.started` → `tool-input-available` (`dynamic`: the client declares no
  server tool); `tool.ended` → `tool-output-available` or `tool-output-error`;
- `activity` → `data-activity` (`{key, text}`, one part updated in place; a
  waiting notice replaced with `{key: null}` once a worker took the turn);
  `card` → `data-card`;
- `approval.requested` → `tool-input-available` (if not yet sent) and
  `tool-approval-request` (`approvalId` = the tool use's id); a resumed run's
  `turn.started` → `tool-output-denied` for each use a person denied;
- `turn.ended` → `finish` (`finished`: `stop`; `stopped`: `abort`), or an
  `error` part with the notice for any other outcome (never a normal finish);
  `turn.waiting` → `finish` (`tool-calls`) unless the stream goes on.
- `text.retracted` of text this response sent, once the turn goes on (a crashed
  run's text, resumed) → `start` with a new `messageId` (`<turn_id>-<n>`), which
  `ai`'s readers take as a new message, then every part of the message so far
  again, the withdrawn text left out: the message is what stands. The stream has
  no part that withdraws text in place; text withdrawn before the response
  began is never sent (the caller leaves it out, transcripts.withdrawn).

The stream's last line, `[DONE]`, is the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..outcomes import Outcome
from ..service.sweeper import WAITING_FOR_WORKER
from ..store.records import EventType, TurnEvent
from .ag_ui import notice

Part = dict[str, Any]
HEADERS = {
    "x-vercel-ai-ui-message-stream": "v1",
    "cache-control": "no-cache, no-store",
    "x-accel-buffering": "no",
}
"""What a UI message stream's response says about itself (besides `text/event-stream`)."""
ENDS = frozenset({"start", "finish", "abort", "error"})
"""The parts that begin or end a message, not of its content."""


@dataclass
class UiStream:
    """One response's parts over one turn's events; see the module docstring."""

    turn_id: str
    resolve: Callable[[str], str]
    decisions: Mapping[str, bool] = field(default_factory=dict)
    """A person's decisions on the uses the turn waited for (the turn's resume record)."""
    _started: bool = False
    _step: bool = False
    _open: str | None = None
    _running: set[str] = field(default_factory=set)
    _announced: set[str] = field(default_factory=set)
    _asked: list[str] = field(default_factory=list)
    _retracted: str | None = None
    _kept: list[Part] = field(default_factory=list)
    """The message's parts so far (those before the response's cursor too), but its
    `start` and end: what a new message repeats after a withdrawal."""
    _sent: set[str] = field(default_factory=set)
    """The bubbles whose text this response sent."""
    _withdrawn: bool = False
    _resets: int = 0
    _caption: str | None = None
    done: bool = False
    """The stream has sent its last part."""

    def feed(self, event: TurnEvent, shown: bool = True) -> list[Part]:
        """The parts one turnkeeper event becomes (none if not `shown`: the client had it
        before this response, and it only updates what the projection knows)."""
        goes_on = event.type not in (EventType.TEXT_RETRACTED, EventType.TURN_ENDED)
        again = self._again() if shown and self._withdrawn and goes_on else []
        out = self._map(event)
        self._kept += [p for p in out if p["type"] not in ENDS]
        if event.type is EventType.TEXT_DELTA and shown:
            self._sent.add(str(event.body["message"]))
        elif event.type is EventType.TEXT_RETRACTED:
            self._withdraw(str(event.body["message"]))
        return [*again, *out] if shown else []

    def _withdraw(self, message: str) -> None:
        """The bubble's text so far never stands: out of the kept parts, and, if this
        response sent it, the message starts again before the next part."""
        text = ("text-start", "text-delta", "text-end")
        self._kept = [p for p in self._kept if not (p["type"] in text and p["id"] == message)]
        if message in self._sent:
            self._sent.discard(message)
            self._withdrawn = True

    def _again(self) -> list[Part]:
        """A new message with every part that stands so far."""
        self._withdrawn = False
        self._resets += 1
        return [{"type": "start", "messageId": f"{self.turn_id}-{self._resets}"}, *self._kept]

    def opening(self) -> list[Part]:
        """`start`, once per response."""
        if self._started:
            return []
        self._started = True
        return [{"type": "start", "messageId": self.turn_id}]

    def waited(self) -> list[Part]:
        """The end of a response whose turn waits for a person."""
        self.done = True
        return [*self._end_step(), {"type": "finish", "finishReason": "tool-calls"}]

    # ---- the mapping ------------------------------------------------------

    def _map(self, event: TurnEvent) -> list[Part]:
        body, kind = event.body, event.type
        if kind is EventType.TURN_STARTED:
            return [*self.opening(), *self._uncaptioned(), *self._denied()]
        if kind is EventType.TEXT_DELTA:
            return self._delta(str(body["message"]), str(body["delta"]))
        out = self._close()
        if kind is EventType.TOOL_STARTED:
            out += self._call(str(body["tool_use_id"]), str(body["tool"]), body.get("input"))
        elif kind is EventType.TOOL_ENDED:
            out += self._result(body)
        elif kind is EventType.ACTIVITY:
            self._caption = key = str(body["key"])
            data = {"key": key, "text": self.resolve(key)}
            out += [*self._begin(), {"type": "data-activity", "id": "activity", "data": data}]
        elif kind is EventType.CARD:
            part = {"type": "data-card", "id": str(body["message"]), "data": body["card"]}
            out += [*self._begin(), part]
        elif kind is EventType.APPROVAL_REQUESTED:
            out += self._approvals(body.get("approvals") or [])
        elif kind is EventType.TEXT_RETRACTED:
            self._retracted = str(body.get("key") or "") or None
        elif kind is EventType.TURN_ENDED:
            out += self._ended(str(body["outcome"]))
        return out

    def _uncaptioned(self) -> list[Part]:
        """A worker took the turn: the waiting notice the sweeper showed is cleared (the
        part updated in place with no key), as the widget clears it."""
        if self._caption != WAITING_FOR_WORKER:
            return []
        self._caption = None
        cleared = {"type": "data-activity", "id": "activity", "data": {"key": None, "text": ""}}
        return [*self._begin(), cleared]

    def _begin(self) -> list[Part]:
        out = self.opening()
        if not self._step:
            self._step = True
            out.append({"type": "start-step"})
        return out

    def _end_step(self) -> list[Part]:
        out = self._close()
        if self._step:
            self._step = False
            out.append({"type": "finish-step"})
        return out

    def _delta(self, message: str, delta: str) -> list[Part]:
        out = self._begin()
        if self._running:  # text after a round of tools: the next model call
            self._running.clear()
        if self._open != message:
            out += self._close()
            self._open = message
            out.append({"type": "text-start", "id": message})
        if delta:
            out.append({"type": "text-delta", "id": message, "delta": delta})
        return out

    def _close(self) -> list[Part]:
        if self._open is None:
            return []
        message, self._open = self._open, None
        return [{"type": "text-end", "id": message}]

    def _call(self, tool_use_id: str, tool: str, given: Any) -> list[Part]:
        out = self._begin()
        self._running.add(tool_use_id)
        if tool_use_id in self._announced:
            return out
        self._announced.add(tool_use_id)
        part = {
            "type": "tool-input-available",
            "toolCallId": tool_use_id,
            "toolName": tool,
            "input": given if given is not None else {},
            "dynamic": True,
        }
        return [*out, part]

    def _result(self, body: Mapping[str, Any]) -> list[Part]:
        tool_use_id = str(body["tool_use_id"])
        out = self._begin()
        if body.get("is_error"):
            out.append(
                {
                    "type": "tool-output-error",
                    "toolCallId": tool_use_id,
                    "errorText": str(body["output"]),
                    "dynamic": True,
                }
            )
        else:
            out.append(
                {
                    "type": "tool-output-available",
                    "toolCallId": tool_use_id,
                    "output": body["output"],
                    "dynamic": True,
                }
            )
        self._running.discard(tool_use_id)
        if not self._running:  # the call and its tools are one step
            out += self._end_step()
        return out

    def _approvals(self, approvals: Sequence[Mapping[str, Any]]) -> list[Part]:
        out: list[Part] = []
        self._asked = []
        for approval in approvals:
            tool_use_id = str(approval["tool_use_id"])
            out += self._call(tool_use_id, str(approval.get("tool") or ""), approval.get("input"))
            self._running.discard(tool_use_id)
            self._asked.append(tool_use_id)
            out.append(
                {
                    "type": "tool-approval-request",
                    "approvalId": tool_use_id,
                    "toolCallId": tool_use_id,
                }
            )
        return out

    def _denied(self) -> list[Part]:
        """A resumed run: the uses a person denied are answered as denied."""
        asked, self._asked = self._asked, []
        denied = [u for u in asked if self.decisions.get(u) is False]
        return [{"type": "tool-output-denied", "toolCallId": u} for u in denied]

    def _ended(self, outcome: str) -> list[Part]:
        self.done = True
        out = [*self.opening(), *self._end_step()]
        if outcome == Outcome.FINISHED:
            return [*out, {"type": "finish", "finishReason": "stop"}]
        if outcome == Outcome.STOPPED:
            return [*out, {"type": "abort", "reason": "stopped"}]
        text = self.resolve(notice(outcome, self._retracted))
        return [*out, {"type": "error", "errorText": text}]
