"""What "a history valid to send as the next request" means, checked on Messages API histories."""

from __future__ import annotations

from collections.abc import Sequence

from turnkeeper.wire import Message


def assert_valid_history(history: Sequence[Message]) -> None:
    """Every tool use is answered by a result in the very next message; no result is orphaned."""
    assert history, "the history is empty"
    assert history[0]["role"] == "user", "a history starts with the user"
    for i, message in enumerate(history):
        content = message["content"]
        uses = (
            [
                b["id"]
                for b in content
                if message["role"] == "assistant"
                and isinstance(b, dict)
                and b["type"] == "tool_use"
            ]
            if isinstance(content, list)
            else []
        )
        if not uses:
            continue
        assert i + 1 < len(history), f"tool uses {uses} at the end of the history have no results"
        answered = [
            b["tool_use_id"]
            for b in history[i + 1]["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
        assert answered == uses, f"message {i + 1}: tool uses {uses} answered by {answered}"
