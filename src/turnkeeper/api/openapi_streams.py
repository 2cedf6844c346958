"""The OpenAPI document's streams (openapi.py): the protocols' request bodies, as much of
them as the handlers require (protocols.py), and the event streams, each event declared
the way OpenAPI 3.1 declares a `text/event-stream`'s (`schema` is one event: its `event`,
`id` and `data`, the data's JSON given by `contentSchema`).

A protocol body is required to carry what its handler reads: AG-UI's `threadId`, `runId`
and `messages` with a user's question (or a `resume`); the AI SDK's `id` and `messages`,
each a question or an approval response (the handler reads only the newest: a history of
other messages is accepted too, so the document is stricter than the handler there).
"""

from __future__ import annotations

from typing import Any

from ..store.records import EventType

_OBJECT: dict[str, Any] = {"type": "object"}
_ID: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[!-~]+$"}
"""A conversation's id as a client chooses it: printable ASCII, no space, 64 at most."""


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    """An event's `data`: text whose JSON is `schema`."""
    return {"type": "string", "contentMediaType": "application/json", "contentSchema": schema}


def _event(data: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["data"],
        "properties": {"data": data, "id": {"type": "string", "pattern": "^[0-9]+$"}, **more},
    }


def stream(description: str, event: dict[str, Any]) -> dict[str, Any]:
    """A `200` that is a `text/event-stream` of `event`s."""
    return {"description": description, "content": {"text/event-stream": {"schema": event}}}


EVENT_LOG = _event(_json(_OBJECT), event={"type": "string", "enum": [str(t) for t in EventType]})
"""One event of `GET /api/turns/{turn_id}/events`: `event` its type, `data` its body."""
AG_UI_EVENT = _event(_json({"type": "object", "required": ["type"]}))
"""One AG-UI event (`data` is the event, its `type` AG-UI's)."""
UI_PART = _event({"anyOf": [{"const": "[DONE]"}, _json({"type": "object", "required": ["type"]})]})
"""One part of the AI SDK's UI message stream, or its closing `[DONE]`."""


def _text_part(text: str) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["type", "text"],
        "properties": {"type": {"const": "text"}, "text": {"type": "string", "pattern": text}},
    }


def ag_ui_input(question: str) -> dict[str, Any]:
    """`POST /api/ag-ui`'s body: a RunAgentInput with a user's question (`question`, the
    text's pattern), a `resume` deciding interrupts, or neither (the conversation's
    MESSAGES_SNAPSHOT, then its active run)."""
    asked = {
        "type": "object",
        "required": ["id", "role", "content"],
        "properties": {
            "id": {"type": "string"},
            "role": {"const": "user"},
            "content": {"type": "string", "pattern": question},
        },
    }
    resume = {
        "type": "object",
        "required": ["interruptId", "status"],
        "properties": {
            "interruptId": {"type": "string"},
            "status": {"enum": ["resolved", "cancelled"]},
            "payload": {},
        },
    }
    return {
        "type": "object",
        "required": ["threadId", "runId", "messages"],
        "properties": {
            "threadId": _ID,
            "runId": {"type": "string"},
            "messages": {"type": "array", "items": asked},
            "resume": {"type": "array", "items": resume},
            "state": {},
            "forwardedProps": {},
        },
    }


def chat_request(question: str) -> dict[str, Any]:
    """`POST /api/chat`'s body: useChat's `{id, messages}`, the newest message a user's
    question (its text parts' text, `question`) or an approval response."""
    asked = {
        "type": "object",
        "required": ["role", "parts"],
        "properties": {
            "id": {"type": "string"},
            "role": {"const": "user"},
            "parts": {"type": "array", "minItems": 1, "maxItems": 1, "items": _text_part(question)},
        },
    }
    approval = {
        "type": "object",
        "required": ["id", "approved"],
        "properties": {"id": {"type": "string"}, "approved": {"type": "boolean"}},
    }
    responded = {
        "type": "object",
        "required": ["type", "state", "approval"],
        "properties": {
            "type": {"type": "string", "pattern": "^tool-"},
            "toolCallId": {"type": "string"},
            "state": {"const": "approval-responded"},
            "approval": approval,
        },
    }
    decided = {
        "type": "object",
        "required": ["role", "parts"],
        "properties": {
            "id": {"type": "string"},
            "role": {"const": "assistant"},
            "parts": {"type": "array", "minItems": 1, "items": responded},
        },
    }
    return {
        "type": "object",
        "required": ["id", "messages"],
        "properties": {
            "id": _ID,
            "messages": {"type": "array", "minItems": 1, "items": {"anyOf": [asked, decided]}},
            "trigger": {"type": "string"},
            "messageId": {"type": "string"},
        },
    }
