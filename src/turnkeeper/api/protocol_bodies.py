"""What the protocols' requests say (api/protocols.py): AG-UI's `RunAgentInput`, the AI
SDK's chat body, read as far as the server reads them (the newest question, or the
decisions the newest message carries; never the history a client sends)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ag_ui.core import RunAgentInput
from pydantic import ValidationError

from .errors import ApiError
from .routes import _question

NO_QUESTION = "The newest message must be the user's question, as text."
BAD_ID = "The conversation's id must be a non-empty string of at most 256 characters."
MAX_CLIENT_ID = 256


def run_input(body: Any) -> RunAgentInput:
    try:
        return RunAgentInput.model_validate(body)
    except ValidationError as e:
        where = ".".join(str(p) for p in e.errors()[0]["loc"]) or "body"
        raise ApiError(400, f"The body is not a RunAgentInput ({where}).") from None


def ag_ui_question(given: RunAgentInput) -> str | None:
    """The newest message's text if it is the user's (a new question); None if there is no
    message, or the newest is not the user's (the client loads the thread)."""
    if not given.messages or given.messages[-1].role != "user":
        return None
    content = given.messages[-1].content
    if isinstance(content, str):
        return _question({"text": content})
    texts = [getattr(part, "text", None) for part in content]
    return _question({"text": "\n".join(t for t in texts if isinstance(t, str))})


def client_id(chat_id: str) -> str:
    """A client's conversation id (`threadId`, the chat's `id`); `400` if empty or longer
    than `MAX_CLIENT_ID` characters."""
    if not chat_id.strip() or len(chat_id) > MAX_CLIENT_ID:
        raise ApiError(400, BAD_ID)
    return chat_id


def chat_body(body: Any) -> tuple[str, list[dict[str, Any]]]:
    if not isinstance(body, dict) or not isinstance(body.get("id"), str):
        raise ApiError(400, 'The body must be a JSON object with the chat\'s "id" and "messages".')
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        raise ApiError(400, '"messages" must be a list ending with the newest message.')
    return body["id"], messages


def chat_question(message: Mapping[str, Any]) -> str:
    parts = message.get("parts")
    if message.get("role") != "user" or not isinstance(parts, list):
        raise ApiError(400, NO_QUESTION)
    texts = [p.get("text") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
    return _question({"text": "\n".join(t for t in texts if isinstance(t, str))})


def approvals(message: Mapping[str, Any]) -> dict[str, bool]:
    """The decisions an assistant message carries, the way `addToolApprovalResponse` records
    them: a tool part in `approval-responded` state, its `approval: {id, approved}`."""
    if message.get("role") != "assistant" or not isinstance(message.get("parts"), list):
        return {}
    found: dict[str, bool] = {}
    for part in message["parts"]:
        approval = part.get("approval") if isinstance(part, dict) else None
        if (
            part_state(part) == "approval-responded"
            and isinstance(approval, dict)
            and isinstance(approval.get("id"), str)
            and isinstance(approval.get("approved"), bool)
        ):
            found[approval["id"]] = approval["approved"]
    return found


def part_state(part: Any) -> str | None:
    """A UI message part's `state`, if it has one."""
    state = part.get("state") if isinstance(part, dict) else None
    return state if isinstance(state, str) else None
