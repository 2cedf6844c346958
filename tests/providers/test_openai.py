"""The OpenAI-compatible adapter through the official SDK over a real socket to the wire server.

Bodies are recorded real Chat Completions responses from OpenAI, xAI, DeepSeek,
Groq and Mistral (tests/recordings) unless marked CONSTRUCTED: a second
tool call, `content_filter`, a non-null `refusal`, and the error bodies.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from turnkeeper import Budget, Outcome
from turnkeeper.errors import ProviderFailed, ProviderUnavailable
from turnkeeper.providers.openai import OpenAIProvider
from turnkeeper.wire import ToolSpec

from .conftest import Adapters
from .test_chat_stream import without_index
from .turns import bubbles, run
from .wire_server import (
    RECORDED,
    Canned,
    WireServer,
    corpus,
    json_response,
    real_rows,
    recording,
    replayed,
)

TOOL_CALL = "vercel__ai/xai__xai-tool-call.json"
DEEPSEEK_TOOL_CALL = "vercel__ai/deepseek__chat__deepseek-tool-call.json"
MISTRAL_TOOL_CALL = "vercel__ai/mistral__mistral-tool-call.json"
TEXT = "vercel__ai/openai__chat__openai-text.json"
LENGTH = "vercel__ai/deepseek__chat__deepseek-text.json"

Make = Callable[..., OpenAIProvider]


@pytest.fixture
def make(adapters: Adapters) -> Make:
    """Builds OpenAI-compatible adapters pointed at the wire server's `/v1`."""
    return lambda **options: adapters(OpenAIProvider, path="/v1", **options)


def body(name: str, folder: Path = RECORDED) -> dict[str, Any]:
    found: dict[str, Any] = copy.deepcopy(recording(name, folder)["response"]["body"])
    return found


async def message_kept(server: WireServer, make: Make, name: str, folder: Path = RECORDED) -> None:
    server.add(replayed(name, folder))
    reply = await make().complete([{"role": "user", "content": "q"}], [], 10)
    assert json.dumps(reply.message) == json.dumps(body(name, folder)["choices"][0]["message"])


@pytest.mark.parametrize("name", real_rows("openai", "chat", streaming=False))
async def test_the_assistant_message_is_kept_as_received(
    server: WireServer, make: Make, name: str
) -> None:
    await message_kept(server, make, name)


async def test_every_message_of_the_corpus_is_kept_as_received(
    server: WireServer, make: Make
) -> None:
    """The same check over the larger corpus, when TURNKEEPER_REAL_RESPONSES names it."""
    folder = corpus()
    for name in real_rows("openai", "chat", streaming=False, folder=folder):
        await message_kept(server, make, name, folder)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("name", [TOOL_CALL, DEEPSEEK_TOOL_CALL, MISTRAL_TOOL_CALL])
async def test_second_request_carries_the_first_message_verbatim(
    server: WireServer, make: Make, name: str, stream: bool
) -> None:
    server.add(replayed(name), replayed(TEXT))
    result, hooks = await run(make(system="be brief", stream=stream))
    assert result.outcome is Outcome.FINISHED
    assert server.streams == ([0, 1] if stream else [])
    first = body(name)["choices"][0]["message"]
    if stream:  # a tool call's `index` frames the stream (test_chat_stream.py)
        first = without_index(body(name))["choices"][0]["message"]
    (call,) = first["tool_calls"]
    sent = server.requests[1].body["messages"]
    assert sent[0] == {"role": "system", "content": "be brief"}
    assert json.dumps(sent[2]) == json.dumps(first)  # reasoning_content, refusal: null included
    assert sent[3] == {"role": "tool", "tool_call_id": call["id"], "content": "weather result 1"}
    assert result.history == [*sent[1:], body(TEXT)["choices"][0]["message"]]
    assert bubbles(result)[-1]["text"] == body(TEXT)["choices"][0]["message"]["content"]
    assert hooks.reports == []


async def test_tool_messages_come_one_per_call_in_order(server: WireServer, make: Make) -> None:
    # CONSTRUCTED: the real xAI tool call, plus a second call to the same function.
    two = body(TOOL_CALL)
    calls = two["choices"][0]["message"]["tool_calls"]
    calls.append(
        {**calls[0], "id": "call_second", "function": {"name": "weather", "arguments": "{}"}}
    )
    server.add(json_response(two), replayed(TEXT))
    result, _ = await run(make())
    assert result.outcome is Outcome.FINISHED
    sent = server.requests[1].body["messages"]
    assert [(m["role"], m["tool_call_id"]) for m in sent[2:]] == [
        ("tool", calls[0]["id"]),
        ("tool", "call_second"),
    ]


async def test_length_never_becomes_a_text_bubble(server: WireServer, make: Make) -> None:
    cut = body(LENGTH)["choices"][0]["message"]["content"]
    server.add(replayed(LENGTH))
    result, hooks = await run(make())
    assert result.outcome is Outcome.TRUNCATED
    assert all(m.get("text") != cut for m in result.state.to_json()["messages"])
    assert bubbles(result)[-1]["key"] == "errors.ai_truncated"
    assert [r.event for r in hooks.reports] == ["truncated"]


@pytest.mark.parametrize(
    "change",
    [
        # CONSTRUCTED: a content filter stop, and a refusal the model wrote.
        {"finish_reason": "content_filter"},
        {"message": {"role": "assistant", "content": None, "refusal": "I can't help with that."}},
    ],
)
async def test_a_refusal_makes_exactly_one_request(
    server: WireServer, make: Make, change: dict[str, Any]
) -> None:
    refused = body(TEXT)
    refused["choices"][0].update(change)
    server.add(json_response(refused), replayed(TEXT))
    result, _ = await run(make())
    assert result.outcome is Outcome.REFUSED
    assert len(server.requests) == 1
    assert bubbles(result) == [
        {"id": "m2", "role": "bot", "key": "errors.ai_refused", "is_error": True}
    ]


async def test_usage_comes_from_prompt_completion_and_cached_tokens(
    server: WireServer, make: Make
) -> None:
    usage = body(DEEPSEEK_TOOL_CALL)["usage"]
    server.add(replayed(DEEPSEEK_TOOL_CALL))
    reply = await make().complete([{"role": "user", "content": "q"}], [], 10)
    assert reply.usage.cache_read_input_tokens == usage["prompt_tokens_details"]["cached_tokens"]
    assert reply.usage.cache_read_input_tokens == 320
    # prompt_tokens (339) include the cached ones: they are counted out of the input billed
    # at the input price, and DeepSeek's own count of the rest agrees
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (19, 92)
    assert reply.usage.input_tokens == usage["prompt_cache_miss_tokens"]
    assert reply.usage.prompt_tokens == usage["prompt_tokens"] == 339


@pytest.mark.parametrize("stream", [True, False])
async def test_the_request_offers_function_tools_and_the_call_timeout(
    server: WireServer, make: Make, stream: bool
) -> None:
    server.add(replayed(TEXT))
    chosen = make(model="local-model", max_tokens=99, extra_body={"top_k": 5}, stream=stream)
    await chosen.complete([{"role": "user", "content": "q"}], [ToolSpec("read_file", "reads")], 6.5)
    (sent,) = server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["x-stainless-read-timeout"] == "6.5"
    assert sent.body == {
        "model": "local-model",
        "messages": [{"role": "user", "content": "q"}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "reads",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
        ],
        "max_tokens": 99,
        "top_k": 5,
        # the usage comes last in a stream; a plain call sends no `stream` at all
        **({"stream": True, "stream_options": {"include_usage": True}} if stream else {}),
    }
    assert "test-key" not in json.dumps(chosen.describe())


# ---- faults ---------------------------------------------------------------------


def error(status: int, code: str, n: int, **headers: str) -> Canned:
    # CONSTRUCTED: OpenAI's error body shape, {"error": {"message", "type", "code"}}.
    failure = {"error": {"message": f"{code} happened", "type": code, "code": code}}
    return json_response(failure, status, {"x-request-id": f"req_{n}", **headers})


def held(n: int) -> Canned:
    data = json.dumps(body(TEXT)).encode()
    headers = {"content-type": "application/json", "x-request-id": f"req_{n}"}
    return Canned(200, data, headers, hold=True)


def cut(n: int) -> Canned:
    data = json.dumps(body(TEXT)).encode()
    return Canned(200, data, {"x-request-id": f"req_{n}"}, cut_after=50)


FAULTS: list[Any] = [
    pytest.param(
        lambda n: error(429, "rate_limit_exceeded", n, **{"retry-after": "1"}),
        1,
        2,
        ProviderUnavailable,
        429,
        "req_2",
        id="429-retry-after",
    ),
    pytest.param(
        lambda n: error(500, "server_error", n), 2, 3, ProviderUnavailable, 500, "req_3", id="500"
    ),
    pytest.param(
        lambda n: error(503, "server_error", n),
        0,
        1,
        ProviderUnavailable,
        503,
        "req_1",
        id="503-no-retries",
    ),
    pytest.param(
        lambda n: error(400, "invalid_request_error", n),
        2,
        1,
        ProviderFailed,
        400,
        "req_1",
        id="400",
    ),
    pytest.param(
        lambda n: error(401, "invalid_api_key", n), 2, 1, ProviderFailed, 401, "req_1", id="401"
    ),
    pytest.param(
        lambda n: Canned(200, b"upstream says no", {"x-request-id": f"req_{n}"}),
        2,
        1,
        ProviderFailed,
        200,
        "req_1",
        id="200-not-json",
    ),
    pytest.param(held, 2, 1, ProviderUnavailable, 200, "req_1", id="body-slower-than-the-call"),
    pytest.param(cut, 1, 2, ProviderUnavailable, 200, "req_2", id="closed-mid-body"),
]


async def test_a_429_whose_wait_would_pass_the_deadline_ends_the_turn_time_limit(
    server: WireServer, make: Make
) -> None:
    """Issue 31, on the Chat Completions wire too: a `retry-after` the turn has no time for
    is not waited, nor sent again; the turn ends `time_limit`, saying why."""
    too_long = error(429, "rate_limit_exceeded", 1, **{"retry-after": "40"})
    server.add(replayed(TOOL_CALL), too_long)
    budget = Budget(call_timeout=10, min_call=1)
    result, hooks = await run(make(max_retries=2, stream=False), budget=budget)
    assert len(server.requests) == 2
    assert result.outcome is Outcome.TIME_LIMIT
    assert bubbles(result)[-1]["key"] == "errors.ai_time_limit"
    (report,) = hooks.reports
    assert "asked to wait 40 s" in report.message
    assert (report.details["status"], report.details["request_id"]) == (429, "req_1")


@pytest.mark.parametrize(
    ("fault", "max_retries", "requests", "kind", "status", "request_id"), FAULTS
)
async def test_a_fault_ends_the_turn_once_with_status_and_request_id(
    server: WireServer,
    make: Make,
    fault: Any,
    max_retries: int,
    requests: int,
    kind: type[Exception],
    status: int,
    request_id: str,
) -> None:
    server.add(replayed(TOOL_CALL), *(fault(n) for n in range(1, max_retries + 2)))
    slow = fault is held
    budget = Budget(call_timeout=2 if slow else 10, min_call=1)
    # plain calls: a body cut or held back is retried as a whole (test_streaming.py has
    # the streams that break)
    result, hooks = await run(make(max_retries=max_retries, stream=False), budget=budget)

    assert len(server.requests) == 1 + requests
    assert result.outcome is Outcome.FAILED
    key = "errors.ai_unavailable" if kind is ProviderUnavailable else "errors.ai_failed"
    assert bubbles(result)[-1]["key"] == key
    (report,) = hooks.reports
    assert report.details["kind"] == kind.__name__
    assert report.details["status"] == status
    assert report.details["request_id"] == request_id
    assert result.history == server.requests[-1].body["messages"]  # nothing lost
