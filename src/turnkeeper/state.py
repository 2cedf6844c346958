"""The published state (ARCHITECTURE §5) in the forms the runtime writes outside the loop.

The loop publishes while it runs; before it starts a turn is `queued`, and a
turn whose worker died is finalised from its last checkpoint as `failed`.
"""

from __future__ import annotations

from typing import Any

from .outcomes import OUTCOME_KEYS, Outcome, Status
from .usage import Usage


def queued(
    turn_id: str, conversation_id: str, question: str, message_offset: int
) -> dict[str, Any]:
    """The first state of a turn: version 1, queued, its user message shown."""
    return {
        "turn_id": turn_id,
        "conversation_id": conversation_id,
        "version": 1,
        "status": Status.QUEUED.value,
        "done": False,
        "stopped": False,
        "has_error": False,
        "activity": None,
        "messages": [{"id": f"m{message_offset + 1}", "role": "user", "text": question}],
        "usage": Usage().as_dict(),
    }


def failed(
    state: dict[str, Any],
    *,
    version: int,
    usage: Usage,
    message_offset: int,
    stopped: bool = False,
) -> dict[str, Any]:
    """`state` finalised as `failed`: done, has_error, an `errors.ai_failed` bubble, no caption;
    as `stopped` (a `notices.stopped` bubble, no error) when its cancel had been accepted."""
    outcome = Outcome.STOPPED if stopped else Outcome.FAILED
    messages = list(state.get("messages") or [])
    key = OUTCOME_KEYS[outcome]
    messages.append(
        {
            "id": f"m{message_offset + len(messages) + 1}",
            "role": "bot",
            "key": key,
            "is_error": not stopped,
        }
    )
    return {
        **state,
        "version": version,
        "status": outcome.value,
        "done": True,
        "stopped": stopped,
        "has_error": not stopped,
        "activity": None,
        "messages": messages,
        "usage": usage.as_dict(),
    }
