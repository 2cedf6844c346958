"""The OpenAPI document's part for what a reader decides and controls: the approvals a
waiting turn holds and the decision on one (as posted, and as the transcript keeps it),
deleting and renaming a conversation, rating a turn's answer (api/controls.py).
`openapi.py` adds these models and paths to the document it builds; they are apart only
to keep that module short."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .controls import MAX_COMMENT, MAX_TITLE


class Approval(BaseModel):
    """A tool use the turn waits for a person to approve or deny."""

    model_config = ConfigDict(extra="forbid")

    tool_use_id: str
    tool: str
    input: Any = Field(description="The input the model gave the tool.")
    key: str | None = Field(description="The tool's caption key (what it did), or null.")
    ask: str = Field(
        description="The key of the tool's ask text (`ask.<tool>`: what it is to do, in the"
        " imperative); a catalog without it: `ui.approval_unknown` with the tool's name."
    )


class Decision(BaseModel):
    tool_use_id: str = Field(description="The `tool_use_id` of one of the turn's `approvals`.")
    approved: bool


class Decided(BaseModel):
    turn_id: str
    status: Literal["waiting", "queued"] = Field(
        description="`waiting` while other uses wait; `queued` once the turn resumes."
    )


class DecisionMade(BaseModel):
    """A person's decision on a tool use, kept in the transcript as its own bubble."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(description="The tool's name.")
    approved: bool
    ask: str | None = Field(
        description="The message key of what the tool was to do (`ask.<tool>`: `Delete a"
        " note`), or null: the tool has no ask text."
    )


SPACES = (
    r"\t\n\u000b\f\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""The characters taken as blank (`str.isspace`), as openapi.py writes them."""


class Rename(BaseModel):
    title: Annotated[
        str | None,
        Field(
            max_length=MAX_TITLE,
            pattern=rf"^[\s\S]*[^\u0000-\u001f\u007f-\u009f{SPACES}][\s\S]*$",
            description="One line (control characters and runs of spaces become one space),"
            " not blank; or null: the first question.",
        ),
    ]


class Renamed(BaseModel):
    conversation_id: str
    title: str | None


class Rating(BaseModel):
    rating: Literal["up", "down"]
    comment: Annotated[
        str | None, Field(default=None, max_length=MAX_COMMENT, pattern=r"^[^\u0000]*$")
    ] = None


class Rated(BaseModel):
    turn_id: str
    rating: Literal["up", "down"]
    comment: str | None


class StillRunning(BaseModel):
    """`409`: a turn of the conversation is not done; `?stop=1` stops it and deletes."""

    error: str
    turn_id: str | None


MODELS: tuple[type[BaseModel], ...] = (Rename, Renamed, Rating, Rated, StillRunning)
Part = dict[str, Any]
"""A part of the OpenAPI document, as JSON (the document's own shapes)."""

_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}


def _json(name: str) -> Part:
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}


def _errors(*codes: int) -> Part:
    return {str(c): {"description": "error", "content": _ERROR} for c in codes}


def _path(name: str) -> Part:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


STOP = {
    "name": "stop",
    "in": "query",
    "description": "1: stop the conversation's turn that is not done, then delete.",
    "schema": {"type": "string", "enum": ["0", "1", "false", "true"]},
}

CONVERSATION: Part = {
    "delete": {
        "summary": "Delete the conversation and everything of it: turns, history, messages,"
        " the model calls' records, events, feedback. 409 while a turn runs, unless ?stop=1.",
        "security": [{"bearer": []}],
        "parameters": [_path("conversation_id"), STOP],
        "responses": {
            "204": {"description": "deleted"},
            "409": {"description": "a turn is not done", "content": _json("StillRunning")},
            **_errors(400, 401, 404),
        },
    },
    "patch": {
        "summary": "Rename the conversation (the title the list shows).",
        "security": [{"bearer": []}],
        "parameters": [_path("conversation_id")],
        "requestBody": {"required": True, "content": _json("Rename")},
        "responses": {
            "200": {"description": "renamed", "content": _json("Renamed")},
            **_errors(400, 401, 404, 413, 415),
        },
    },
}
"""The `DELETE` and `PATCH` of `/api/conversations/{conversation_id}`."""

FEEDBACK: Part = {
    "post": {
        "summary": "Rate the answer of a done turn, up or down, with a comment; once per turn"
        " (a new rating replaces the one before).",
        "security": [{"bearer": []}],
        "parameters": [_path("turn_id")],
        "requestBody": {"required": True, "content": _json("Rating")},
        "responses": {
            "200": {"description": "kept", "content": _json("Rated")},
            **_errors(400, 401, 404, 409, 413, 415),
        },
    }
}
"""`POST /api/turns/{turn_id}/feedback`."""

CHAT_MESSAGES: Part = {
    "get": {
        "summary": "The caller's conversation of this chat id as the AI SDK's `UIMessage[]`"
        " (user text; assistant text, dynamic tool parts with input, output and approval,"
        " data parts), what `useChat({messages})` takes; the active turn's answer is left to"
        " `GET /api/chat/{chat_id}/stream`. `[]` when the caller has none of this id (so also"
        " without a token: a chat not yet created).",
        "security": [{"bearer": []}, {}],
        "parameters": [_path("chat_id")],
        "responses": {
            "200": {
                "description": "the UI messages",
                "content": {
                    "application/json": {"schema": {"type": "array", "items": {"type": "object"}}}
                },
            },
            **_errors(400, 401),
        },
    }
}
"""`GET /api/chat/{chat_id}/messages`."""
