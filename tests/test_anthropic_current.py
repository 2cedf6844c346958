"""What Anthropic's responses carry at the end of 2026, read (issue 50.2).

The refusals are recorded real streams (tests/recordings, simonw/llm-anthropic: Claude
Fable 5.1 refusing with `stop_details` and `output_tokens_details`). CONSTRUCTED, from the
API reference ("Refusals and fallback", "Compaction"), since no recording holds them: a
`fallback` block, an `advisor_tool_result` block, and `usage.iterations`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.providers.turns import EchoTools
from tests.providers.wire_server import WireServer, json_response, recording, streamed
from turnkeeper import LocalHooks, Outcome, run_turn
from turnkeeper.cli import main, timeline
from turnkeeper.observe.report import Report
from turnkeeper.providers import messages_api
from turnkeeper.providers.anthropic import AnthropicProvider
from turnkeeper.providers.select import FALLBACK_BETA, ModelSettings, choose_provider
from turnkeeper.turn.compaction import Compaction
from turnkeeper.turn.context import Window
from turnkeeper.turn.trace import read_trace, write_trace

REFUSAL = (
    "simonw__llm-anthropic@31e912ea93a6/cassettes__test_anthropic__test_refusal_raises__000.json"
)
REFUSAL_ASYNC = (
    "simonw__llm-anthropic@31e912ea93a6/"
    "cassettes__test_anthropic__test_refusal_raises_async__000.json"
)

FALLBACK = {
    "type": "fallback",
    "from": {"model": "claude-fable-5"},
    "to": {"model": "claude-opus-4-8"},
    "trigger": {"type": "refusal", "category": "cyber"},
}
ADVISOR = {
    "type": "advisor_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": {"type": "advisor_result", "text": "Check the edge cases first."},
}
ITERATIONS = [
    {"type": "compaction", "input_tokens": 180000, "output_tokens": 3500},
    {"type": "message", "model": "claude-fable-5", "input_tokens": 900, "output_tokens": 0},
    {
        "type": "fallback_message",
        "model": "claude-opus-4-8",
        "input_tokens": 23000,
        "cache_read_input_tokens": 2000,
        "output_tokens": 1000,
    },
]


def current_body() -> dict[str, Any]:
    """A response that compacted, fell back to another model and asked an advisor."""
    return {
        "id": "msg_current",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-8",
        "content": [
            FALLBACK,
            ADVISOR,
            {"type": "text", "text": "Here is the answer."},
        ],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 23000,
            "cache_read_input_tokens": 2000,
            "output_tokens": 1000,
            "output_tokens_details": {"thinking_tokens": 400},
            "iterations": ITERATIONS,
        },
    }


@pytest.fixture
async def claude(server: WireServer) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider(api_key="test-key", base_url=server.url)
    yield provider
    await provider.aclose()


async def turn(provider: AnthropicProvider) -> tuple[Any, list[Report]]:
    reports: list[Report] = []
    hooks = LocalHooks(reporter=reports.append)
    result = await run_turn("question", provider=provider, toolset=EchoTools(), hooks=hooks)
    return result, reports


# ---- refusals with stop_details (recorded) -------------------------------------------


@pytest.mark.parametrize("name", [REFUSAL, REFUSAL_ASYNC])
async def test_a_recorded_refusal_reports_its_stop_details_and_shows_the_same_notice(
    server: WireServer, claude: AnthropicProvider, name: str, tmp_path: Path, capsys: Any
) -> None:
    server.add(streamed(name))
    result, reports = await turn(claude)
    assert result.outcome is Outcome.REFUSED
    assert len(server.requests) == 1  # never retried
    (report,) = reports
    details = report.details["stop_details"]
    assert details["category"] == "reasoning_extraction"
    assert details["explanation"].startswith("This request was blocked")
    bot = [m for m in result.state.to_json()["messages"] if m["role"] == "bot"]
    assert bot == [{"id": "m2", "role": "bot", "key": "errors.ai_refused", "is_error": True}]
    # the trace keeps them (and output_tokens_details), and `trace show` says them
    path = tmp_path / "trace.json"
    write_trace(result.trace, path)
    (call,) = read_trace(path).calls
    assert call.response["stop_details"] == details
    assert call.response["usage"]["output_tokens_details"] == {"thinking_tokens": 0}
    assert main(["trace", "show", "--json", str(path)]) == 0
    (row,) = json.loads(capsys.readouterr().out)["iterations"]
    assert row["stop_details"] == details
    assert main(["trace", "show", str(path)]) == 0
    assert "stop details: reasoning_extraction; This request was blocked" in capsys.readouterr().out


def test_the_stop_details_of_a_recorded_refusal_are_on_the_reply() -> None:
    events = recording(REFUSAL)["response"]["events"]
    delta = next(e["data"] for e in events if e["data"]["type"] == "message_delta")
    body = {
        **events[0]["data"]["message"],
        **delta["delta"],
        "usage": delta["usage"],
    }
    reply = messages_api.parse_reply(body)
    assert reply.stop_details == delta["delta"]["stop_details"]
    assert reply.context is None  # no iterations: the usage is the context


# ---- fallback and advisor blocks, usage.iterations (CONSTRUCTED) -----------------------


async def test_fallback_and_advisor_blocks_are_kept_never_shown_and_counted(
    server: WireServer, claude: AnthropicProvider, tmp_path: Path
) -> None:
    server.add(json_response(current_body()))
    result, _ = await turn(claude)
    assert result.outcome is Outcome.FINISHED
    assert result.history[-1]["content"][:2] == [FALLBACK, ADVISOR]  # verbatim, in place
    bot = [m for m in result.state.to_json()["messages"] if m["role"] == "bot"]
    assert [m.get("text") for m in bot] == ["Here is the answer."]
    path = tmp_path / "trace.json"
    write_trace(result.trace, path)
    (row,) = timeline.rows(read_trace(path).calls)
    assert dict(row.blocks) == {"fallback": 1, "advisor_tool_result": 1}
    assert "blocks: fallback 1, advisor_tool_result 1" in timeline.render([row], "finished")
    assert row.to_json()["blocks"] == {"fallback": 1, "advisor_tool_result": 1}


def test_usage_iterations_are_summed_once() -> None:
    usage = messages_api.parse_usage(current_body()["usage"])
    assert usage.input_tokens == 180000 + 900 + 23000  # not the top level's 23000 again
    assert usage.output_tokens == 3500 + 0 + 1000
    assert usage.cache_read_input_tokens == 2000
    assert usage.iterations == 1  # one model call, however many samplings it held
    plain = messages_api.parse_usage({"input_tokens": 10, "output_tokens": 2})
    assert (plain.input_tokens, plain.output_tokens) == (10, 2)


def test_the_last_iteration_is_the_context_size_for_compaction() -> None:
    reply = messages_api.parse_reply(current_body())
    assert reply.context == 23000 + 2000 + 1000
    window = Window(Compaction(window=200_000), None, messages_api.WIRE, {"model": "claude-x"})
    history = [{"role": "user", "content": "q"}, reply.message]
    window.seen(reply.usage, len(history), reply.context)
    assert window.estimate(history) == 26000  # not the 208500 the summed usage holds
    window.seen(reply.usage, len(history))
    assert window.estimate(history) == reply.usage.prompt_tokens + reply.usage.output_tokens


# ---- fallbacks from the model settings --------------------------------------------------


@pytest.mark.parametrize(
    ("given", "sent"),
    [
        (("claude-opus-4-8",), [{"model": "claude-opus-4-8"}]),
        ("default", "default"),
    ],
)
async def test_fallbacks_pass_through_from_the_model_settings(
    server: WireServer, given: Any, sent: Any
) -> None:
    server.add(json_response(copy.deepcopy(current_body())))
    settings = ModelSettings(fallbacks=given)
    environ = {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": server.url}
    provider = choose_provider("anthropic", None, environ, settings=settings)
    assert isinstance(provider, AnthropicProvider)
    try:
        await provider.complete([{"role": "user", "content": "q"}], [], 10)
    finally:
        await provider.aclose()
    (request,) = server.requests
    assert request.body["fallbacks"] == sent
    assert FALLBACK_BETA in request.headers["anthropic-beta"].split(",")
    plain = ModelSettings().anthropic()
    assert "betas" not in plain
    assert "fallbacks" not in plain.get("extra_body", {})


def test_fallbacks_are_refused_for_the_openai_providers() -> None:
    from turnkeeper.errors import ConfigError

    with pytest.raises(ConfigError, match="fallbacks"):
        ModelSettings(fallbacks="default").openai()
