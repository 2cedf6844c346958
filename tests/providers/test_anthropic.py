"""The Anthropic adapter through the official SDK over a real socket to the wire server.

Responses are recorded real ones (tests/recordings, never suspect_synthetic)
unless a test says it is CONSTRUCTED from the Anthropic API reference, for what
the recordings lack: `pause_turn`, `model_context_window_exceeded`, 529
`overloaded_error`, 500 `api_error`, 401, and new block types.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from turnkeeper import Budget, Outcome, Stop
from turnkeeper.errors import ProviderFailed, ProviderUnavailable
from turnkeeper.providers.anthropic import AnthropicProvider
from turnkeeper.turn.replay import first_difference, replay
from turnkeeper.wire import ToolSpec

from .conftest import Adapters
from .turns import bubbles, run, unmarked
from .wire_server import (
    RECORDED,
    Canned,
    WireServer,
    corpus,
    json_response,
    real_rows,
    recording,
    replayed,
    sse_response,
    sse_text,
    streamed,
)

TOOLS_FIRST = "simonw__llm-anthropic/cassettes__test_anthropic__test_tools__000.json"
TOOLS_THEN = "simonw__llm-anthropic/cassettes__test_anthropic__test_tools__001.json"
THINKING_FIRST = (
    "simonw__llm-anthropic/cassettes__test_anthropic__"
    "test_fixed_version_tool_chain_with_thinking_display_regression__000.json"
)
THINKING_THEN = THINKING_FIRST.replace("__000.json", "__001.json")
REFUSAL = (
    "simonw__llm-anthropic@31e912ea93a6/cassettes__test_anthropic__test_refusal_raises__000.json"
)
TOOL_NO_ARGS = "vercel__ai/anthropic__anthropic-tool-no-args.json"
TEXT = "vercel__ai/anthropic__anthropic-text.json"
MAX_TOKENS = "vercel__ai/anthropic__anthropic-issue-11855-follow-up__hist-31ad6551.json"
BAD_REQUEST = "vercel__ai/anthropic__anthropic-issue-17366-error__hist-338b3599.json"


Make = Callable[..., AnthropicProvider]


@pytest.fixture
def make(adapters: Adapters) -> Make:
    """Builds Anthropic adapters pointed at the wire server."""
    return lambda **options: adapters(AnthropicProvider, **options)


def fold_reference(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The content a stream's events describe, computed independently of the adapter."""
    content: list[dict[str, Any]] = []
    partial: dict[int, str] = {}
    for event in (e["data"] for e in events):
        if event["type"] == "content_block_start":
            content.append(json.loads(json.dumps(event["content_block"])))
        elif event["type"] == "content_block_delta":
            block, delta = content[event["index"]], event["delta"]
            if delta["type"] == "input_json_delta":
                partial[event["index"]] = partial.get(event["index"], "") + delta["partial_json"]
            elif delta["type"] == "citations_delta":
                block["citations"] = (block.get("citations") or []) + [delta["citation"]]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            else:
                ((key, value),) = [(k, v) for k, v in delta.items() if k != "type"]
                block[key] = (block.get(key) or "") + value
        elif event["type"] == "content_block_stop" and partial.get(event["index"]):
            content[event["index"]]["input"] = json.loads(partial[event["index"]])
    return content


def single_streams(folder: Path = RECORDED) -> list[str]:
    """Real streams of one whole response (some vercel chunk files hold several)."""
    found = []
    for name in real_rows("anthropic", "messages", streaming=True, folder=folder):
        events = recording(name, folder)["response"]["events"]
        if sum(e["data"]["type"] == "message_start" for e in events) == 1:
            found.append(name)
    return found


# ---- verbatim history -------------------------------------------------------


async def body_appended_byte_for_byte(
    server: WireServer, make: Make, name: str, folder: Path = RECORDED, *, stream: bool = False
) -> None:
    """Plain, or streamed: the wire server then sends the body's event stream."""
    body = recording(name, folder)["response"]["body"]
    server.add(replayed(name, folder))
    reply = await make(stream=stream).complete([{"role": "user", "content": "q"}], [], 10)
    assert (len(server.requests) - 1 in server.streams) is stream
    assert json.dumps(reply.message) == json.dumps(
        {"role": "assistant", "content": body["content"]}
    ), name


async def stream_folded_whole(
    server: WireServer, make: Make, name: str, folder: Path = RECORDED
) -> None:
    events = recording(name, folder)["response"]["events"]
    server.add(streamed(name, folder))
    reply = await make(stream=True).complete([{"role": "user", "content": "q"}], [], 10)
    assert reply.message == {"role": "assistant", "content": fold_reference(events)}, name


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("name", real_rows("anthropic", "messages", streaming=False))
async def test_body_content_is_appended_byte_for_byte(
    server: WireServer, make: Make, name: str, stream: bool
) -> None:
    await body_appended_byte_for_byte(server, make, name, stream=stream)


@pytest.mark.parametrize("name", single_streams())
async def test_streamed_content_keeps_every_field_of_the_events(
    server: WireServer, make: Make, name: str
) -> None:
    await stream_folded_whole(server, make, name)


async def test_every_recording_of_the_corpus_is_kept_verbatim(
    server: WireServer, make: Make
) -> None:
    """The same checks over the larger corpus, when TURNKEEPER_REAL_RESPONSES names it."""
    folder = corpus()
    for name in real_rows("anthropic", "messages", streaming=False, folder=folder):
        await body_appended_byte_for_byte(server, make, name, folder)
        await body_appended_byte_for_byte(server, make, name, folder, stream=True)
    for name in single_streams(folder):
        await stream_folded_whole(server, make, name, folder)


async def test_second_request_carries_the_first_response_verbatim(
    server: WireServer, make: Make
) -> None:
    first = recording(TOOL_NO_ARGS)["response"]["body"]
    server.add(replayed(TOOL_NO_ARGS), replayed(TEXT))
    result, _ = await run(make())
    assert result.outcome is Outcome.FINISHED
    sent = server.requests[1].body["messages"]
    assert json.dumps(sent[1]) == json.dumps({"role": "assistant", "content": first["content"]})
    (use,) = [b for b in first["content"] if b["type"] == "tool_use"]
    assert sent[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": use["id"],
                "content": "updateIssueList result 1",
                "cache_control": {"type": "ephemeral"},  # the latest message: a cache mark
            }
        ],
    }
    assert result.history == [
        *unmarked(sent),
        {"role": "assistant", "content": recording(TEXT)["response"]["body"]["content"]},
    ]
    # text in a tool_use response is shown; so is the answer
    assert bubbles(result)[0]["text"] == first["content"][0]["text"]


async def test_tool_results_come_as_one_user_message_in_tool_use_order(
    server: WireServer, make: Make
) -> None:
    events = recording(TOOLS_FIRST)["response"]["events"]
    server.add(streamed(TOOLS_FIRST), streamed(TOOLS_THEN))
    result, _ = await run(make(stream=True))
    assert result.outcome is Outcome.FINISHED
    assert len(server.requests) == 2
    content = fold_reference(events)
    ids = [b["id"] for b in content if b["type"] == "tool_use"]
    assert len(ids) == 2
    sent = server.requests[1].body["messages"]
    assert sent[1] == {"role": "assistant", "content": content}
    assert sent[2]["role"] == "user"
    assert [b["tool_use_id"] for b in sent[2]["content"]] == ids
    assert len(sent) == 3


async def test_thinking_and_its_signature_go_back_untouched(server: WireServer, make: Make) -> None:
    events = [e["data"] for e in recording(THINKING_FIRST)["response"]["events"]]
    signature = next(
        e["delta"]["signature"]
        for e in events
        if e.get("delta", {}).get("type") == "signature_delta"
    )
    thinking = "".join(
        e["delta"]["thinking"] for e in events if e.get("delta", {}).get("type") == "thinking_delta"
    )
    server.add(streamed(THINKING_FIRST), streamed(THINKING_THEN))
    result, _ = await run(make(stream=True))
    assert result.outcome is Outcome.FINISHED
    (block,) = [
        b for b in server.requests[1].body["messages"][1]["content"] if b["type"] == "thinking"
    ]
    assert block["signature"] == signature
    assert block["thinking"] == thinking


@pytest.mark.parametrize("stream", [False, True])
async def test_block_types_that_do_not_exist_yet_pass_through(
    server: WireServer, make: Make, stream: bool
) -> None:
    # CONSTRUCTED: a block type the API does not have (yet), with nested fields.
    block = {"type": "hologram_2031", "id": "holo_1", "shape": {"faces": [1, 2], "note": None}}
    body = {
        "id": "msg_new",
        "type": "message",
        "role": "assistant",
        "model": "claude-future",
        "content": [block, {"type": "text", "text": "done"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }
    server.add(sse_response(as_stream(body)) if stream else json_response(body))
    reply = await make(stream=stream).complete([{"role": "user", "content": "q"}], [], 10)
    assert reply.message["content"] == [block, {"type": "text", "text": "done"}]
    assert reply.text == "done"


def as_stream(body: dict[str, Any]) -> str:
    """CONSTRUCTED: a body as the event stream the API reference describes (one delta per text)."""
    start = {**body, "content": [], "stop_reason": None}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for i, block in enumerate(body["content"]):
        if block["type"] == "text":
            events.append(
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "text", "text": ""},
                }
            )
            events.append(
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "text_delta", "text": block["text"]},
                }
            )
        else:
            events.append({"type": "content_block_start", "index": i, "content_block": block})
        events.append({"type": "content_block_stop", "index": i})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
            "usage": body["usage"],
        }
    )
    events.append({"type": "message_stop"})
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


# ---- stop reasons on the real wire ---------------------------------------------


async def test_a_refusal_makes_exactly_one_request(server: WireServer, make: Make) -> None:
    server.add(streamed(REFUSAL), replayed(TEXT))
    result, hooks = await run(make(stream=True))
    assert result.outcome is Outcome.REFUSED
    assert len(server.requests) == 1
    assert bubbles(result) == [
        {"id": "m2", "role": "bot", "key": "errors.ai_refused", "is_error": True}
    ]
    assert [r.event for r in hooks.reports] == ["refused"]


async def test_max_tokens_never_becomes_a_text_bubble(server: WireServer, make: Make) -> None:
    cut = recording(MAX_TOKENS)["response"]["body"]["content"][0]["text"]
    server.add(replayed(MAX_TOKENS))
    result, hooks = await run(make())
    assert result.outcome is Outcome.TRUNCATED
    assert all(m.get("text") != cut for m in result.state.to_json()["messages"])
    assert bubbles(result) == [
        {"id": "m2", "role": "bot", "key": "errors.ai_truncated", "is_error": True}
    ]
    assert [r.event for r in hooks.reports] == ["truncated"]
    assert result.history[-1]["content"][0]["text"] == cut  # kept in the history, not shown


async def test_pause_turn_resends_the_paused_content(server: WireServer, make: Make) -> None:
    # CONSTRUCTED from the API reference: a server tool paused a long turn; the
    # client sends the assistant content back as is, with no new user message.
    paused = [
        {
            "type": "server_tool_use",
            "id": "srvtoolu_1",
            "name": "web_search",
            "input": {"query": "q"},
        },
    ]
    first = {**recording(TEXT)["response"]["body"], "content": paused, "stop_reason": "pause_turn"}
    server.add(json_response(first), replayed(TEXT))
    result, hooks = await run(make())
    assert result.outcome is Outcome.FINISHED
    assert server.requests[1].body["messages"] == [
        {"role": "user", "content": "question"},
        {"role": "assistant", "content": [{**paused[0], "cache_control": {"type": "ephemeral"}}]},
    ]
    assert result.history[1] == {"role": "assistant", "content": paused}, "stored unmarked"
    assert any(s.activity == "activity.web_search" for s in hooks.published)
    assert hooks.reports == []


async def test_context_window_exceeded_ends_the_turn(server: WireServer, make: Make) -> None:
    # CONSTRUCTED from the API reference (stop_reason model_context_window_exceeded).
    body = {**recording(TEXT)["response"]["body"], "stop_reason": "model_context_window_exceeded"}
    server.add(json_response(body), replayed(TEXT))
    result, hooks = await run(make())
    assert result.outcome is Outcome.CONTEXT_EXCEEDED
    assert len(server.requests) == 1
    assert bubbles(result)[-1]["key"] == "errors.ai_context_full"
    assert [r.event for r in hooks.reports] == ["context_exceeded"]


# ---- usage ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "stream"),
    [
        ("vercel__ai/anthropic__anthropic-web-search-tool.1.json", False),
        ("vercel__ai/anthropic__anthropic-web-fetch-tool.1.json", False),
        ("vercel__ai/anthropic__anthropic-issue-5942-cache-read__chunks__hist-2a5df7bb.json", True),
        (
            "vercel__ai/anthropic__anthropic-issue-5942-cache-write__chunks__hist-6e1ce1bd.json",
            True,
        ),
        (TOOLS_FIRST, True),
    ],
)
async def test_usage_comes_from_the_real_fields(
    server: WireServer, make: Make, name: str, stream: bool
) -> None:
    usage = recording(name)["summary"]["usage"]
    server.add(streamed(name) if stream else replayed(name))
    reply = await make(stream=stream).complete([{"role": "user", "content": "q"}], [], 10)
    server_tools = usage.get("server_tool_use", {})
    assert reply.usage.as_dict() == {
        "iterations": 1,
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage["output_tokens"],
        "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
        "cache_read_input_tokens": usage["cache_read_input_tokens"],
        "web_search_requests": server_tools.get("web_search_requests", 0),
        "web_fetch_requests": server_tools.get("web_fetch_requests", 0),
    }
    assert sum(reply.usage.as_dict().values()) > 1


# ---- the request ----------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_the_request_carries_the_configuration_and_the_call_timeout(
    server: WireServer, make: Make, stream: bool
) -> None:
    server.add(replayed(TEXT))
    web_search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
    mcp = {
        "type": "url",
        "url": "https://mcp.example/sse",
        "name": "ex",
        "authorization_token": "s3cret",
    }
    chosen = make(
        model="claude-test",
        max_tokens=321,
        system="be brief",
        server_tools=[web_search],
        mcp_servers=[mcp],
        betas=["mcp-client-2025-04-04"],
        stream=stream,
    )
    await chosen.complete([{"role": "user", "content": "q"}], [ToolSpec("read_file", "reads")], 7.5)
    (sent,) = server.requests
    assert sent.path == "/v1/messages"
    assert sent.headers["x-stainless-timeout"] == "7.5"
    assert sent.headers["anthropic-beta"] == "mcp-client-2025-04-04"
    assert sent.body == {
        "model": "claude-test",
        "max_tokens": 321,
        "messages": [{"role": "user", "content": "q"}],
        "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
        "tools": [
            {
                "name": "read_file",
                "description": "reads",
                "input_schema": {"type": "object", "properties": {}},
            },
            {**web_search, "cache_control": {"type": "ephemeral"}},
        ],
        "mcp_servers": [mcp],
        **({"stream": True} if stream else {}),  # a plain call sends no `stream` at all
    }
    assert "s3cret" not in json.dumps(chosen.describe())
    assert "test-key" not in json.dumps(chosen.describe())


# ---- faults ---------------------------------------------------------------------


def error(kind: str, message: str, status: int, request_id: str, **headers: str) -> Canned:
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}
    return json_response(body, status, {"request-id": request_id, **headers})


def real_400(request_id: str) -> Canned:
    body = recording(BAD_REQUEST)["response"]["body"]
    return json_response(body, 400, {"request-id": request_id})


OK_HEADERS = {"content-type": "application/json", "request-id": "req_ok"}
TEXT_BODY = json.dumps(
    {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "x" * 200}],
        "stop_reason": "end_turn",
    }
).encode()

# id, response per attempt, max_retries, stream, requests, error class, status, request id
FAULTS: list[tuple[str, Any, int, bool, int, type[Exception], int | None, str]] = [
    (
        "429-retry-after",
        lambda n: error("rate_limit_error", "slow down", 429, f"req_{n}", **{"retry-after": "1"}),
        1,
        False,
        2,
        ProviderUnavailable,
        429,
        "req_2",
    ),
    (
        "429-no-retries",
        lambda n: error("rate_limit_error", "slow down", 429, f"req_{n}"),
        0,
        False,
        1,
        ProviderUnavailable,
        429,
        "req_1",
    ),
    # CONSTRUCTED: 529 overloaded_error and 500 api_error bodies as the API reference shows them.
    (
        "529-overloaded",
        lambda n: error("overloaded_error", "Overloaded", 529, f"req_{n}"),
        2,
        False,
        3,
        ProviderUnavailable,
        529,
        "req_3",
    ),
    (
        "500-api-error",
        lambda n: error("api_error", "Internal server error", 500, f"req_{n}"),
        2,
        False,
        3,
        ProviderUnavailable,
        500,
        "req_3",
    ),
    (
        "500-no-retries",
        lambda n: error("api_error", "Internal server error", 500, f"req_{n}"),
        0,
        False,
        1,
        ProviderUnavailable,
        500,
        "req_1",
    ),
    ("400-real-body", lambda n: real_400(f"req_{n}"), 2, False, 1, ProviderFailed, 400, "req_1"),
    # CONSTRUCTED: 401 authentication_error.
    (
        "401",
        lambda n: error("authentication_error", "invalid x-api-key", 401, f"req_{n}"),
        2,
        False,
        1,
        ProviderFailed,
        401,
        "req_1",
    ),
    (
        "200-not-json",
        lambda n: Canned(200, b"<html>gateway</html>", {"request-id": f"req_{n}"}),
        2,
        False,
        1,
        ProviderFailed,
        200,
        "req_1",
    ),
    (
        "body-slower-than-the-call",
        lambda n: Canned(200, TEXT_BODY, {**OK_HEADERS, "request-id": f"req_{n}"}, hold=True),
        2,
        False,
        1,
        ProviderUnavailable,
        200,
        "req_1",
    ),
    (
        "closed-mid-body",
        lambda n: Canned(200, TEXT_BODY, {**OK_HEADERS, "request-id": f"req_{n}"}, cut_after=40),
        1,
        False,
        2,
        ProviderUnavailable,
        200,
        "req_2",
    ),
    (
        "closed-mid-stream",
        lambda n: Canned(
            200,
            sse_text(recording(TEXT_STREAM)["response"]).encode(),
            {"content-type": "text/event-stream", "request-id": f"req_{n}"},
            cut_after=300,
        ),
        2,
        True,
        1,
        ProviderUnavailable,
        200,
        "req_1",
    ),
    # CONSTRUCTED: an overloaded_error event in the middle of a 200 stream.
    (
        "overloaded-mid-stream",
        lambda n: sse_response(
            "event: message_start\ndata: "
            + json.dumps(
                {
                    "type": "message_start",
                    "message": {**recording(TEXT)["response"]["body"], "content": []},
                }
            )
            + "\n\nevent: error\ndata: "
            + json.dumps(
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            )
            + "\n\n",
            {"request-id": f"req_{n}"},
        ),
        2,
        True,
        1,
        ProviderUnavailable,
        200,
        "req_1",
    ),
]
TEXT_STREAM = "vercel__ai/anthropic__anthropic-text__chunks.json"


@pytest.mark.parametrize(
    ("fault", "max_retries", "stream", "requests", "kind", "status", "request_id"),
    [pytest.param(*f[1:], id=f[0]) for f in FAULTS],
)
async def test_a_fault_ends_the_turn_once_with_status_and_request_id(
    server: WireServer,
    make: Make,
    fault: Any,
    max_retries: int,
    stream: bool,
    requests: int,
    kind: type[Exception],
    status: int | None,
    request_id: str,
) -> None:
    first = streamed(TOOLS_FIRST) if stream else replayed(TOOL_NO_ARGS)
    server.add(first, *(fault(n) for n in range(1, max_retries + 2)))
    budget = Budget(call_timeout=10, min_call=1)
    if requests == 1 and kind is ProviderUnavailable and status == 200 and not stream:
        budget = Budget(call_timeout=2, min_call=1)  # the held body outlasts this call
    result, hooks = await run(make(stream=stream, max_retries=max_retries), budget=budget)

    assert len(server.requests) == 1 + requests
    assert result.outcome is Outcome.FAILED
    key = "errors.ai_unavailable" if kind is ProviderUnavailable else "errors.ai_failed"
    assert bubbles(result)[-1] == {
        "id": bubbles(result)[-1]["id"],
        "role": "bot",
        "key": key,
        "is_error": True,
    }
    (report,) = hooks.reports
    assert report.event == "failed"
    assert report.details["kind"] == kind.__name__
    assert report.details["status"] == status
    assert report.details["request_id"] == request_id
    assert result.history == unmarked(server.requests[-1].body["messages"])  # nothing lost
    assert result.state.to_json()["done"] is True
    assert result.state.to_json()["has_error"] is True


async def test_a_429_is_waited_out_inside_the_call_as_its_retry_after_says(
    server: WireServer, make: Make
) -> None:
    """Issue 31: the provider's own 429 is a bounded attempt inside the call, not a turn
    tried again: waited out as `retry-after` says, then the call goes on."""
    slow_down = error("rate_limit_error", "slow down", 429, "req_1", **{"retry-after": "1"})
    server.add(slow_down, replayed(TEXT))
    result, hooks = await run(make(max_retries=2), budget=Budget(call_timeout=10, min_call=1))
    assert result.outcome is Outcome.FINISHED
    assert len(server.requests) == 2
    assert result.usage.iterations == 1
    assert hooks.reports == []


async def test_a_429_whose_wait_would_pass_the_deadline_ends_the_turn_time_limit(
    server: WireServer, make: Make
) -> None:
    """A `retry-after` the turn has no time for is not waited: the turn ends `time_limit`,
    and its report says the provider asked for longer than the turn had left."""
    server.add(error("rate_limit_error", "slow down", 429, "req_1", **{"retry-after": "30"}))
    budget = Budget(call_timeout=10, min_call=1)
    result, hooks = await run(make(max_retries=2), budget=budget)
    assert len(server.requests) == 1, "nothing was sent again"
    assert result.outcome is Outcome.TIME_LIMIT
    assert bubbles(result)[-1]["key"] == "errors.ai_time_limit"
    (report,) = hooks.reports
    assert report.event == "time_limit"
    assert "asked to wait 30 s before trying again (retry-after)" in report.message
    assert (report.details["status"], report.details["wait"]) == (429, 30.0)
    assert result.trace.calls[0].error is not None
    assert result.trace.calls[0].error["wait"] == 30.0
    again = await replay(result.trace)
    assert first_difference(result.trace, again.trace) is None, "replay ends it alike"


async def test_stop_reasons_map_once_into_the_closed_set(server: WireServer, make: Make) -> None:
    body = recording(TEXT)["response"]["body"]
    server.add(
        *(json_response({**body, "stop_reason": s}) for s in ("stop_sequence", "something_new"))
    )
    chosen = make()
    replies = [await chosen.complete([{"role": "user", "content": "q"}], [], 10) for _ in range(2)]
    assert [(r.stop, r.raw_stop) for r in replies] == [
        (Stop.END_TURN, "stop_sequence"),
        (Stop.OTHER, "something_new"),
    ]


# ---- a transport of the caller's -------------------------------------------------


async def test_a_given_transport_carries_the_calls_and_keeps_the_attempt_hooks(make: Make) -> None:
    """`transport=` (a mock, for tests and benchmarks) replaces only the socket layer."""
    body = recording(TEXT)["response"]["body"]
    seen: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        if len(seen) == 1:
            return httpx2.Response(200, json=body, headers={"request-id": "req_mock_1"})
        fault = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
        return httpx2.Response(529, json=fault, headers={"request-id": "req_mock_2"})

    adapter = make(max_retries=0, transport=httpx2.MockTransport(answer))
    reply = await adapter.complete([{"role": "user", "content": "q"}], [], 5)
    with pytest.raises(ProviderUnavailable) as raised:
        await adapter.complete([{"role": "user", "content": "q"}], [], 5)
    assert reply.message == {"role": "assistant", "content": body["content"]}
    assert [r.url.path for r in seen] == ["/v1/messages", "/v1/messages"]
    assert all(0 < t <= 5 for t in seen[0].extensions["timeout"].values())  # hook shrank them
    assert (raised.value.status, raised.value.request_id) == (529, "req_mock_2")
