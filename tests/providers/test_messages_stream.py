"""Folding a Messages API event stream: cut streams and error events are errors, not answers."""

from __future__ import annotations

from typing import Any

import pytest

from turnkeeper.errors import ProviderFailed, ProviderUnavailable
from turnkeeper.providers.messages_stream import MessageFold

START = {
    "type": "message_start",
    "message": {
        "id": "m",
        "role": "assistant",
        "content": [],
        "usage": {"input_tokens": 5, "output_tokens": 1},
    },
}


def fold(*events: dict[str, Any]) -> MessageFold:
    folded = MessageFold()
    for event in events:
        folded.add(event)
    return folded


def test_a_stream_without_message_stop_was_cut() -> None:
    folded = fold(
        START,
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": "par"},
        },
    )
    with pytest.raises(ProviderUnavailable, match="before message_stop"):
        folded.body()


def test_an_overloaded_event_is_unavailable_and_a_stray_delta_is_failed() -> None:
    with pytest.raises(ProviderUnavailable, match="overloaded_error"):
        fold(
            START, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        )
    with pytest.raises(ProviderFailed, match="never started"):
        fold(
            START,
            {
                "type": "content_block_delta",
                "index": 3,
                "delta": {"type": "text_delta", "text": "x"},
            },
        )


def test_deltas_extend_their_fields_and_message_delta_sets_the_totals() -> None:
    body = fold(
        START,
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "a"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "b"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "sig"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {
                "type": "mcp_tool_use",
                "id": "t",
                "name": "echo",
                "input": {},
                "server_name": "s",
            },
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"message": '},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '"hi"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_details": None},
            "usage": {"output_tokens": 9, "input_tokens": None},
        },
        {"type": "message_stop"},
    ).body()
    assert body["content"] == [
        {"type": "thinking", "thinking": "ab", "signature": "sig"},
        {
            "type": "mcp_tool_use",
            "id": "t",
            "name": "echo",
            "input": {"message": "hi"},
            "server_name": "s",
        },
    ]
    assert body["stop_reason"] == "end_turn"
    assert body["usage"] == {"input_tokens": 5, "output_tokens": 9}
