"""Prompt-cache marks on the wire: the Anthropic adapter through the official SDK to the wire
server, and the OpenAI-compatible adapter's stable prefix with no cache parameter.

Responses are recorded real ones where a recording has the shape, else CONSTRUCTED
with `tests/scripts` (several tool rounds in one turn, many tool uses at once).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.scripts import answer, asks, text, tool_use
from turnkeeper import Outcome
from turnkeeper.errors import ConfigError
from turnkeeper.providers import cache_marks
from turnkeeper.providers.anthropic import AnthropicProvider
from turnkeeper.providers.openai import OpenAIProvider

from .conftest import Adapters
from .turns import EchoTools, run
from .wire_server import WireServer, json_response, recording, replayed

THINKING = (
    "simonw__llm-anthropic/cassettes__test_anthropic__"
    "test_fixed_version_tool_chain_with_thinking_display_regression__000.json"
)
TOOL_NO_ARGS = "vercel__ai/anthropic__anthropic-tool-no-args.json"
TEXT = "vercel__ai/anthropic__anthropic-text.json"
OPENAI_TOOL_CALL = "vercel__ai/xai__xai-tool-call.json"
OPENAI_TEXT = "vercel__ai/openai__chat__openai-text.json"
MARK = {"type": "ephemeral"}
EARLIER_TURN: list[dict[str, Any]] = [
    {"role": "user", "content": "what did I order?"},
    {"role": "assistant", "content": [text("A teapot.")]},
]


@pytest.fixture
def anthropic(adapters: Adapters) -> Callable[..., AnthropicProvider]:
    """Anthropic adapters for the shop's assistant (its instructions unless told otherwise)."""

    def build(**options: Any) -> AnthropicProvider:
        options.setdefault("system", "You help customers of Example Shop.")
        return adapters(AnthropicProvider, **options)

    return build


def marked(body: dict[str, Any]) -> list[str]:
    """Where a request body carries marks: `tools[i]`, `system[i]`, `messages[i][j]`."""
    found = [f"tools[{i}]" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    system = body.get("system")
    if isinstance(system, list):
        found += [f"system[{i}]" for i, b in enumerate(system) if "cache_control" in b]
    for i, message in enumerate(body["messages"]):
        content = message["content"]
        if isinstance(content, list):
            found += [f"messages[{i}][{j}]" for j, b in enumerate(content) if "cache_control" in b]
    return found


async def three_calls(server: WireServer, provider: AnthropicProvider) -> Any:
    """A turn after an earlier one: two tool rounds, then the answer."""
    server.add(
        json_response(asks(tool_use("tool"))),
        json_response(asks(tool_use("tool"), tool_use("tool"))),
        json_response(answer("done")),
    )
    prior = copy.deepcopy(EARLIER_TURN)
    result = await run_history(provider, prior)
    assert prior == EARLIER_TURN, "the history handed in is never written to"
    return result


async def run_history(provider: AnthropicProvider, history: list[dict[str, Any]]) -> Any:
    from turnkeeper import LocalHooks, run_turn

    return await run_turn(
        "and the kettle?",
        provider=provider,
        toolset=EchoTools(("tool", "other")),
        history=history,
        hooks=LocalHooks(reporter=lambda r: None),
    )


async def test_every_call_marks_the_tools_the_instructions_and_the_history_at_most_four(
    server: WireServer, anthropic: Callable[..., AnthropicProvider]
) -> None:
    result = await three_calls(server, anthropic())
    assert result.outcome is Outcome.FINISHED
    first, second, third = (r.body for r in server.requests)
    # the last tool, the instructions, and the history: the question is a string (sent as
    # stored), so the last block before it, the earlier turn's answer, carries the mark
    assert marked(first) == ["tools[1]", "system[0]", "messages[1][0]"]
    assert first["system"] == [
        {"type": "text", "text": "You help customers of Example Shop.", "cache_control": MARK}
    ]
    assert first["messages"][2] == {"role": "user", "content": "and the kettle?"}
    # from the second call on: where the previous call's prefix ended, and the latest message
    assert marked(second) == ["tools[1]", "system[0]", "messages[1][0]", "messages[4][0]"]
    assert marked(third) == ["tools[1]", "system[0]", "messages[4][0]", "messages[6][1]"]
    assert max(cache_marks.breakpoints(r.body) for r in server.requests) == 4


async def test_the_stored_history_never_carries_a_mark(
    server: WireServer, anthropic: Callable[..., AnthropicProvider]
) -> None:
    result = await three_calls(server, anthropic())
    assert "cache_control" not in json.dumps(result.history)
    assert "cache_control" in json.dumps(server.requests[-1].body["messages"])
    sent = server.requests[-1].body["messages"]
    assert len(result.history) == len(sent) + 1, "the history is what was sent, and the answer"
    for stored, request in zip(result.history, sent, strict=False):
        assert stored["role"] == request["role"]
        if stored["content"] != request["content"]:  # a marked copy: only the mark differs
            bare = [
                {k: v for k, v in b.items() if k != "cache_control"} for b in request["content"]
            ]
            assert bare == stored["content"]


async def test_the_opt_out_sends_no_mark_and_the_instructions_as_a_string(
    server: WireServer, anthropic: Callable[..., AnthropicProvider]
) -> None:
    provider = anthropic(prompt_cache=False)
    result = await three_calls(server, provider)
    assert result.outcome is Outcome.FINISHED
    assert all("cache_control" not in json.dumps(r.body) for r in server.requests)
    assert server.requests[0].body["system"] == "You help customers of Example Shop."
    assert provider.describe()["prompt_cache"] is None


async def test_the_one_hour_ttl_is_on_every_mark(
    server: WireServer, anthropic: Callable[..., AnthropicProvider]
) -> None:
    provider = anthropic(prompt_cache="1h")
    await three_calls(server, provider)
    body = server.requests[-1].body
    marks = [b["cache_control"] for b in [*body["tools"], *body["system"]] if "cache_control" in b]
    marks += [
        b["cache_control"]
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if "cache_control" in b
    ]
    assert marks == [{"type": "ephemeral", "ttl": "1h"}] * 4
    assert provider.describe()["prompt_cache"] == "1h"


async def test_the_trace_says_what_was_marked(
    server: WireServer, anthropic: Callable[..., AnthropicProvider]
) -> None:
    server.add(replayed(TEXT))
    result, _ = await run(anthropic())
    request = result.trace.request
    assert request["prompt_cache"] == "5m"
    assert request["cache_breakpoints"] == ["tools", "system", "previous", "latest"]
    assert len(request["cache_breakpoints"]) <= cache_marks.MAX_BREAKPOINTS


@pytest.mark.parametrize("setting", ["2h", "", 1, "5M"])
def test_a_prompt_cache_setting_it_cannot_send_is_a_config_error(setting: Any) -> None:
    with pytest.raises(ConfigError, match="prompt_cache must be"):
        AnthropicProvider(api_key="k", prompt_cache=setting)
    assert [cache_marks.ttl_of(s) for s in (True, "5m", "1h", False)] == ["5m", "5m", "1h", None]


# ---- where the marks go, on recorded and constructed histories ---------------------------


def test_many_tool_uses_at_once_still_read_the_previous_calls_prefix_exactly() -> None:
    """25 tool uses and their results put 50 blocks after the previous call's end, more
    than the 20 the API looks back from a mark: the previous call's last message is
    marked itself."""
    uses = [tool_use("tool") for _ in range(25)]
    results = [{"type": "tool_result", "tool_use_id": u["id"], "content": "r"} for u in uses]
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [tool_use("tool")]},
        {"role": "user", "content": [results[0] | {"tool_use_id": "first"}]},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": results},
    ]
    sent = cache_marks.marked_messages(history, MARK)
    assert sent[2]["content"][-1]["cache_control"] == MARK, "the previous call's end"
    assert sent[4]["content"][-1]["cache_control"] == MARK, "the latest message"
    assert [i for i, m in enumerate(sent) if m is not history[i]] == [2, 4], "copies, only those"
    assert "cache_control" not in json.dumps(history)


def test_thinking_blocks_are_never_marked() -> None:
    """A real response with extended thinking, continued (pause-turn style) as the last
    message: the mark goes on its last block that is not thinking."""
    events = recording(THINKING)["response"]["events"]
    blocks = [
        e["data"]["content_block"] for e in events if e["data"]["type"] == "content_block_start"
    ]
    assert [b["type"] for b in blocks] == ["thinking", "tool_use"]
    thinking_last = [blocks[1], blocks[0]]
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": thinking_last},
    ]
    sent = cache_marks.marked_messages(history, MARK)
    assert [("cache_control" in b) for b in sent[1]["content"]] == [True, False]
    only_thinking: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [blocks[0]]},
    ]
    assert cache_marks.marked_messages(only_thinking, MARK) == only_thinking


def test_no_tools_and_no_instructions_leave_the_history_marks_alone() -> None:
    provider = AnthropicProvider(api_key="k", system=None)
    params = provider.request([{"role": "user", "content": [text("q")]}], [], 10.0)
    assert "system" not in params
    assert "tools" not in params
    assert cache_marks.breakpoints(params) == 1


# ---- OpenAI-compatible: a stable prefix, no parameter ------------------------------------


async def test_openai_requests_send_no_cache_parameter_and_keep_the_prefix_stable(
    server: WireServer,
) -> None:
    server.add(replayed(OPENAI_TOOL_CALL), replayed(OPENAI_TEXT))
    provider = OpenAIProvider(
        api_key="k", base_url=f"{server.url}/v1", system="You help.", model="local"
    )
    try:
        result, _ = await run(provider)
    finally:
        await provider.aclose()
    assert result.outcome is Outcome.FINISHED
    first, second = (r.body for r in server.requests)
    streaming = {"stream", "stream_options"}
    assert set(first) == set(second) == {"model", "messages", "tools", *streaming}, "no cache"
    assert second["messages"][: len(first["messages"])] == first["messages"], "history appended"
    assert second["messages"][0] == {"role": "system", "content": "You help."}, "system first"
    assert second["tools"] == first["tools"], "the same tools in the same order"
    # the recorded usage: 244 of 291 prompt tokens were cached
    assert (result.usage.cache_read_input_tokens, result.usage.prompt_tokens) == (244, 291 + 16)
    assert result.usage.input_tokens == 291 - 244 + 16
