"""Folding a Messages API event stream: cut streams and error events are errors, not answers;
the answer's text leaves the fold as it arrives; every real plain body, streamed, folds back
into itself."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.streams import messages_events
from turnkeeper.errors import ProviderFailed, ProviderUnavailable
from turnkeeper.providers import messages_api
from turnkeeper.providers.messages_stream import MessageFold

from .wire_server import real_rows, recording

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


# ---- the answer's text as it arrives --------------------------------------------------


def fold_recorded(name: str) -> tuple[MessageFold, list[str]]:
    texts: list[str] = []
    folded = MessageFold(texts.append)
    for event in recording(name)["response"]["events"]:
        folded.add(event["data"])
    return folded, texts


@pytest.mark.parametrize("name", real_rows("anthropic", "messages", streaming=True))
def test_the_text_given_as_it_arrives_joins_to_the_replys_text(name: str) -> None:
    events = [e["data"] for e in recording(name)["response"]["events"]]
    if sum(e["type"] == "message_start" for e in events) != 1:
        pytest.skip("a file of several responses")
    folded, texts = fold_recorded(name)
    reply = messages_api.parse_reply(folded.body())
    assert "".join(texts) == reply.text, name
    expected: list[str] = []  # each text delta as it came; a newline where a text block follows one
    blocks = 0
    for e in events:
        if e["type"] == "content_block_start" and e["content_block"]["type"] == "text":
            blocks += 1
            expected += ["\n"] if blocks > 1 else []
        elif e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta":
            expected += [e["delta"]["text"]] if e["delta"]["text"] else []
    assert texts == expected, name


def test_thinking_and_tool_input_are_not_answer_text() -> None:
    thinking = (
        "simonw__llm-anthropic/cassettes__test_anthropic__test_stream_events_thinking__000.json"
    )
    folded, texts = fold_recorded(thinking)
    body = folded.body()
    (thought,) = [b["thinking"] for b in body["content"] if b["type"] == "thinking"]
    (answer,) = [b["text"] for b in body["content"] if b["type"] == "text"]
    assert thought
    assert thought not in "".join(texts)
    assert "".join(texts) == answer
    assert len(texts) > 1
    tools = "vercel__ai/anthropic__anthropic-json-tool.1__chunks.json"
    folded, texts = fold_recorded(tools)
    assert any(b["type"] == "tool_use" and b["input"] for b in folded.body()["content"])
    assert texts == []


def test_a_second_text_block_is_joined_with_a_newline_as_the_reply_joins_it() -> None:
    """Web search answers in several text blocks (between citations)."""
    search = "simonw__llm-anthropic/cassettes__test_anthropic__test_web_search__000.json"
    folded, texts = fold_recorded(search)
    blocks = [b["text"] for b in folded.body()["content"] if b["type"] == "text"]
    assert len(blocks) > 1
    assert "".join(texts) == "\n".join(blocks)
    assert texts.count("\n") >= len(blocks) - 1


# ---- a plain body, streamed, folds back into itself --------------------------------------


@pytest.mark.parametrize("name", real_rows("anthropic", "messages", streaming=False))
def test_a_real_plain_body_streamed_folds_back_into_itself_byte_for_byte(name: str) -> None:
    body = recording(name)["response"]["body"]
    folded = fold(*messages_events(body)).body()
    assert json.dumps(folded) == json.dumps(body)
