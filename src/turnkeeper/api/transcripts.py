"""A conversation in each protocol's own shape, for a client that loads it (a reload):
the AI SDK's `UIMessage[]` (`GET /api/chat/{id}/messages`, what `useChat({messages})`
takes) and AG-UI's messages (the `MESSAGES_SNAPSHOT` a run without a new question
answers).

Each turn is its question (the user's bubble) and, once done, its answer: the turn's
event log projected as the stream projects it (ui_stream.py, ag_ui.py), the text a
later `text.retracted` withdrew left out, so a loaded conversation is what a reader of
the whole stream ends with. A turn whose events were forgotten (`event_retention`) is
its published bubbles: text, and cards. The turn still active is its question only:
its answer is the stream's (`GET /api/chat/{id}/stream`, the AG-UI run that follows
the snapshot), read from its first event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ag_ui.core import AssistantMessage, Message, UserMessage

from ..store import Store
from ..store.records import EventType, TurnEvent
from .ag_ui import AgUiRun
from .ui_stream import Part, UiStream

LIMIT = 1000
"""Transcript messages a loaded conversation holds at most (its newest)."""


def withdrawn(events: Iterable[TurnEvent]) -> set[int]:
    """The seqs of the `text.delta`s a later `text.retracted` of their bubble withdrew:
    what no projection of these events shows."""
    dead: set[int] = set()
    since: dict[str, list[int]] = {}
    for event in events:
        message = str(event.body.get("message"))
        if event.type is EventType.TEXT_DELTA:
            since.setdefault(message, []).append(event.seq)
        elif event.type is EventType.TEXT_RETRACTED:
            dead.update(since.pop(message, []))
    return dead


def ui_message(turn_id: str, parts: Sequence[Part], decisions: Mapping[str, bool]) -> Part:
    """The assistant `UIMessage` a client builds from a turn's stream parts (as `ai`'s
    `processUIMessageStream` does), each decided use's `approval` with its decision."""
    built: list[Part] = []
    texts: dict[str, Part] = {}
    tools: dict[str, Part] = {}
    for part in parts:
        kind = part["type"]
        if kind == "start-step":
            built.append({"type": "step-start"})
        elif kind == "text-start":
            texts[part["id"]] = {"type": "text", "text": "", "state": "streaming"}
            built.append(texts[part["id"]])
        elif kind == "text-delta":
            texts[part["id"]]["text"] += part["delta"]
        elif kind == "text-end":
            texts.pop(part["id"])["state"] = "done"
        elif kind.startswith("tool-"):
            _tool(tools, built, part)
        elif kind.startswith("data-"):
            _data(built, part)
    for tool_use_id, tool in tools.items():
        if "approval" in tool and tool_use_id in decisions:
            tool["approval"]["approved"] = decisions[tool_use_id]
    return {"id": turn_id, "role": "assistant", "parts": built}


def _tool(tools: dict[str, Part], built: list[Part], part: Part) -> None:
    kind, tool_use_id = part["type"], part["toolCallId"]
    if kind == "tool-input-available":
        tool = tools.setdefault(tool_use_id, {"type": "dynamic-tool"})
        if len(tool) == 1:
            built.append(tool)
        tool.update(toolName=part["toolName"], toolCallId=tool_use_id, input=part["input"])
        tool["state"] = "input-available"
        return
    tool = tools[tool_use_id]
    if kind == "tool-approval-request":
        tool.update(state="approval-requested", approval={"id": part["approvalId"]})
    elif kind == "tool-output-available":
        tool.update(state="output-available", output=part["output"])
    elif kind == "tool-output-error":
        tool.update(state="output-error", errorText=part["errorText"])
    elif kind == "tool-output-denied":
        tool["state"] = "output-denied"


def _data(built: list[Part], part: Part) -> None:
    for kept in built:
        if kept["type"] == part["type"] and kept.get("id") == part["id"]:
            kept["data"] = part["data"]
            return
    built.append({"type": part["type"], "id": part["id"], "data": part["data"]})


class Transcripts:
    """A conversation loaded in either protocol's shape, from one store."""

    def __init__(self, store: Store, page: int = LIMIT) -> None:
        self.store = store
        self.page = page

    async def log(self, turn_id: str) -> list[TurnEvent]:
        """The turn's event log as written so far."""
        log: list[TurnEvent] = []
        while page := await self.store.events_after(turn_id, log[-1].seq if log else 0, self.page):
            log += page
        return log

    async def events(self, turn_id: str) -> list[TurnEvent]:
        """The turn's event log, withdrawn text left out."""
        log = await self.log(turn_id)
        dead = withdrawn(log)
        return [e for e in log if e.seq not in dead]

    async def turns(self, conversation_id: str) -> list[tuple[str, list[dict[str, Any]], bool]]:
        """Each turn's id and bubbles, oldest first, and whether its answer may be shown
        (it is done: not the conversation's active turn)."""
        page = await self.store.transcript(conversation_id, limit=LIMIT)
        active = await self.store.open_turn(conversation_id)
        turns: dict[str, list[dict[str, Any]]] = {}
        for message in page.messages:
            turns.setdefault(str(message.get("turn_id")), []).append(message)
        return [(t, bubbles, t != active) for t, bubbles in turns.items()]

    async def ui_messages(self, conversation_id: str, resolve: Callable[[str], str]) -> list[Part]:
        """The conversation as `UIMessage[]`: each turn's question, then its answer."""
        out: list[Part] = []
        for turn_id, bubbles, done in await self.turns(conversation_id):
            question = _question(bubbles)
            if question is not None:
                text = {"type": "text", "text": question["text"]}
                out.append({"id": str(question["id"]), "role": "user", "parts": [text]})
            if done:
                answer = await self._ui_answer(turn_id, bubbles, resolve)
                out += [answer] if answer["parts"] else []
        return out

    async def _ui_answer(
        self, turn_id: str, bubbles: list[dict[str, Any]], resolve: Callable[[str], str]
    ) -> Part:
        events = await self.events(turn_id)
        record = await self.store.resume_record(turn_id)
        decisions = dict(record.decisions) if record is not None else {}
        if not events:
            return {"id": turn_id, "role": "assistant", "parts": _bubble_parts(bubbles)}
        stream = UiStream(turn_id, resolve, decisions)
        parts = [p for event in events for p in stream.feed(event)]
        return ui_message(turn_id, parts, decisions)

    async def ag_ui_messages(
        self, conversation_id: str, thread_id: str, resolve: Callable[[str], str]
    ) -> list[Message]:
        """The conversation as AG-UI messages: each turn's question, its tool calls and
        results, its answer's text."""
        out: list[Message] = []
        for turn_id, bubbles, done in await self.turns(conversation_id):
            question = _question(bubbles)
            if question is not None:
                out.append(UserMessage(id=str(question["id"]), content=question["text"]))
            if not done:
                continue
            events = await self.events(turn_id)
            if not events:
                texts = [b for b in bubbles if b.get("role") == "bot" and b.get("text")]
                out += [AssistantMessage(id=str(b["id"]), content=b["text"]) for b in texts]
                continue
            run = AgUiRun(thread_id, "", turn_id, resolve)
            for event in events:
                run.feed(event, shown=False)
            out += run.snapshot()
        return out


def _question(bubbles: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    for bubble in bubbles:
        if bubble.get("role") == "user" and isinstance(bubble.get("text"), str):
            return bubble
    return None


def _bubble_parts(bubbles: Sequence[Mapping[str, Any]]) -> list[Part]:
    """A forgotten log's answer: its bubbles' text and cards."""
    parts: list[Part] = []
    for bubble in bubbles:
        if bubble.get("role") != "bot":
            continue
        if isinstance(bubble.get("text"), str):
            parts.append({"type": "text", "text": bubble["text"], "state": "done"})
        elif bubble.get("card") is not None:
            parts.append({"type": "data-card", "id": str(bubble["id"]), "data": bubble["card"]})
    return parts
