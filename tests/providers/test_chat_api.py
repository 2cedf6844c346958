"""The Chat Completions wire format as plain data: stop table, tool results, readers."""

from __future__ import annotations

from typing import Any

import pytest

from turnkeeper import Outcome, Stop, decide
from turnkeeper.errors import ProviderFailed, ProviderUnavailable
from turnkeeper.providers import chat_api, wire_format
from turnkeeper.wire import ToolResult


def completion(message: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}


@pytest.mark.parametrize(
    ("finish", "stop", "outcome"),
    [
        ("stop", Stop.END_TURN, Outcome.FINISHED),
        ("length", Stop.MAX_TOKENS, Outcome.TRUNCATED),
        ("content_filter", Stop.REFUSAL, Outcome.REFUSED),
        ("something_new", Stop.OTHER, Outcome.FAILED),
        (None, Stop.OTHER, Outcome.FAILED),
    ],
)
def test_finish_reasons_map_into_the_closed_set(
    finish: str | None, stop: Stop, outcome: Outcome
) -> None:
    reply = chat_api.parse_reply(completion({"role": "assistant", "content": "hi"}, finish))
    assert reply.stop is stop
    assert reply.raw_stop == finish
    assert decide(reply) is outcome


def test_tool_calls_continue_and_a_refusal_wins() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    reply = chat_api.parse_reply(
        completion({"role": "assistant", "tool_calls": [call]}, "tool_calls")
    )
    assert reply.stop is Stop.TOOL_USE
    assert decide(reply) is None
    assert [(u.id, u.name, u.input) for u in reply.tool_uses] == [("c1", "f", {"a": 1})]
    assert reply.steps == ("f",)
    # some local servers end a tool-calling response with "stop"
    assert (
        chat_api.parse_reply(completion({"role": "assistant", "tool_calls": [call]}, "stop")).stop
        is Stop.TOOL_USE
    )
    refused = {"role": "assistant", "content": None, "refusal": "no"}
    assert chat_api.parse_reply(completion(refused, "stop")).stop is Stop.REFUSAL


def test_unparsable_arguments_reach_the_tool_as_they_came() -> None:
    call = {"id": "c1", "function": {"name": "f", "arguments": "{not json"}}
    (use,) = chat_api.parse_reply(
        completion({"role": "assistant", "tool_calls": [call]}, "tool_calls")
    ).tool_uses
    assert use.input == "{not json"


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ([], ProviderFailed),
        ({"choices": []}, ProviderFailed),
        ({"choices": [{"message": {"role": "user", "content": "x"}}]}, ProviderFailed),
        ({"error": {"message": "busy", "code": "rate_limit_exceeded"}}, ProviderUnavailable),
        ({"error": {"message": "bad", "type": "invalid_request_error"}}, ProviderFailed),
    ],
)
def test_what_is_not_a_completion_is_an_error(body: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        chat_api.parse_reply(body)


def test_tool_results_are_one_tool_message_each_in_order() -> None:
    results = [ToolResult("b", "second?"), ToolResult("a", "oops", True)]
    assert chat_api.tool_results(results) == [
        {"role": "tool", "tool_call_id": "b", "content": "second?"},
        {"role": "tool", "tool_call_id": "a", "content": "oops"},
    ]
    assert chat_api.tool_results([]) == []


def test_readers_accept_strings_parts_and_null() -> None:
    assert chat_api.message_text({"content": "plain"}) == "plain"
    parts = [{"type": "text", "text": "a"}, {"type": "image_url"}, {"type": "text", "text": "b"}]
    assert chat_api.message_text({"content": parts}) == "a\nb"
    assert chat_api.message_text({"content": None}) == ""
    history = [chat_api.user_message("q"), *chat_api.tool_results([ToolResult("c", "r")])]
    assert chat_api.recorded_results(history) == {"c": ToolResult("c", "r")}


def test_the_registry_names_this_module() -> None:
    assert wire_format("openai") is chat_api.WIRE
    assert chat_api.WIRE.name == "openai"


def test_an_assistant_message_with_nothing_in_it_is_not_kept() -> None:
    empty = {"role": "assistant", "content": None}
    assert not chat_api.parse_reply(completion(empty, "stop")).keep
    assert chat_api.parse_reply(completion({"role": "assistant", "content": ""}, "stop")).keep
    refusal = {"role": "assistant", "content": None, "refusal": "no"}
    assert chat_api.parse_reply(completion(refusal, "stop")).keep
