"""The Responses API adapter through the official SDK over a real socket to the wire server.

Bodies and streams are recorded real Responses exchanges (tests/recordings: OpenAI's
gpt-5-mini with encrypted reasoning and a four-call tool loop, Azure's text and tool
call, an OpenAI `failed` stream, xAI's `incomplete` stream behind an OpenAI-compatible
server, a web search and an MCP approval request) unless marked CONSTRUCTED (built in
their shape by tests/responses_wire.py): a refusal part, `content_filter`,
`max_output_tokens`, an unknown status, a stream cut short.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import responses_wire as rw
from turnkeeper import LocalHooks, Outcome, run_turn
from turnkeeper.errors import ContextTooLong, ProviderFailed, ProviderUnavailable
from turnkeeper.outcomes import Stop
from turnkeeper.providers import responses_api
from turnkeeper.providers.openai_responses import OpenAIResponsesProvider
from turnkeeper.providers.responses_stream import ResponseFold
from turnkeeper.turn import summary as asking
from turnkeeper.turn.compaction import Compaction
from turnkeeper.turn.context import Window
from turnkeeper.turn.replay import first_difference, replay
from turnkeeper.turn.trace import read_trace, write_trace
from turnkeeper.wire import ToolResult, ToolSpec

from .conftest import Adapters
from .turns import EchoTools, bubbles, run
from .wire_server import (
    RECORDED,
    Canned,
    WireServer,
    corpus,
    json_response,
    recording,
    sse_response,
)

REASONING = "vercel__ai/openai__responses__openai-reasoning-encrypted-content.1.json"
LOOP = "vercel__ai/openai__responses__openai-reasoning-encrypted-content.1__chunks.json"
TEXT = "vercel__ai/azure__azure-text.1.json"
TEXT_STREAM = "vercel__ai/azure__azure-text.1__chunks.json"
TOOL_CALL = "vercel__ai/azure__azure-tool-call.1.json"
TOOL_CALL_STREAM = "vercel__ai/azure__azure-tool-call.1__chunks.json"
FAILED = "vercel__ai/openai__responses__openai-error.1__chunks.json"
INCOMPLETE = "vercel__ai/openai-compatible__responses__reasoning.1__chunks__hist-65bea20f.json"
WEB_SEARCH = "vercel__ai/openai__responses__openai-web-search-tool.1__chunks.json"
MCP_APPROVAL = "vercel__ai/openai__responses__openai-mcp-tool-approval.1.json"
CLIENT_TOOL = "vercel__ai/openai__responses__openai-client-tool-search.2.json"

Make = Callable[..., OpenAIResponsesProvider]


@pytest.fixture
def make(adapters: Adapters) -> Make:
    """Builds Responses adapters pointed at the wire server's `/v1`."""
    return lambda **options: adapters(OpenAIResponsesProvider, path="/v1", **options)


def body(name: str) -> dict[str, Any]:
    found: dict[str, Any] = copy.deepcopy(recording(name)["response"]["body"])
    return found


def last_response(name: str) -> dict[str, Any]:
    """The response a recorded stream ended with (its last event's)."""
    events = recording(name)["response"]["events"]
    found: dict[str, Any] = events[-1]["data"]["response"]
    return found


def streams(name: str) -> list[Canned]:
    return [sse_response(t) for t in rw.recorded_streams(recording(name)["response"]["events"])]


def folded(name: str, on_text: Callable[[str], None] | None = None) -> dict[str, Any]:
    fold = ResponseFold(on_text)
    for event in recording(name)["response"]["events"]:
        fold.add(event["data"])
    return fold.body()


QUESTION = [{"role": "user", "content": "q"}]


# ---- the recorded bodies, read -------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_reasoning_answer_keeps_its_items_verbatim(
    server: WireServer, make: Make, stream: bool
) -> None:
    recorded = body(REASONING)
    server.add(json_response(recorded))  # streamed by the server when asked
    reply = await make(stream=stream).complete(QUESTION, [], 10)
    assert reply.stop is Stop.END_TURN
    assert reply.raw_stop == "completed"
    assert json.dumps(reply.message) == json.dumps(
        {"role": "assistant", "output": recorded["output"]}
    )
    assert [i["type"] for i in reply.message["output"]] == ["reasoning", "message"]
    assert reply.message["output"][0]["encrypted_content"].startswith("gAAAA")
    assert reply.text == recorded["output"][1]["content"][0]["text"]
    assert server.streams == ([0] if stream else [])


def test_usage_counts_cached_tokens_out_of_the_input() -> None:
    usage = body(REASONING)["usage"]
    read = responses_api.parse_usage(usage)
    cached = usage["input_tokens_details"]["cached_tokens"]
    assert read.cache_read_input_tokens == cached
    assert read.input_tokens == usage["input_tokens"] - cached
    assert read.prompt_tokens == usage["input_tokens"]
    assert read.output_tokens == usage["output_tokens"]  # reasoning tokens included


def test_a_recorded_incomplete_stream_is_a_cut_answer() -> None:
    """xAI's grok through an OpenAI-compatible Responses server: cut at 300 output tokens,
    its reason its own (`REASON_MAX_LEN`), and the cached tokens it reported counted out."""
    reply = responses_api.parse_reply(folded(INCOMPLETE))
    assert reply.stop is Stop.MAX_TOKENS
    assert reply.raw_stop == "incomplete:REASON_MAX_LEN"
    assert reply.text.startswith("The sky appears blue")
    assert (reply.usage.input_tokens, reply.usage.cache_read_input_tokens) == (12, 12)


def test_a_recorded_failed_stream_is_the_error_it_names() -> None:
    with pytest.raises(ProviderFailed, match="insufficient_quota"):
        folded(FAILED)
    failed = recording(FAILED)["response"]["events"][-1]["data"]["response"]
    with pytest.raises(ProviderFailed, match="insufficient_quota"):
        responses_api.parse_reply(failed)


@pytest.mark.parametrize("name", [TEXT_STREAM, TOOL_CALL_STREAM, WEB_SEARCH, LOOP])
def test_a_recorded_stream_folds_into_its_last_response(name: str) -> None:
    texts: list[str] = []
    events = recording(name)["response"]["events"]
    first = rw.recorded_streams(events)[0]
    fold = ResponseFold(texts.append)
    for line in first.split("\n\n"):
        if line:
            fold.feed(line.removeprefix("data: "))
    whole = fold.body()
    reply = responses_api.parse_reply(whole)
    assert "".join(texts) == reply.text
    assert whole == json.loads(first.split("\n\n")[-2].removeprefix("data: "))["response"]
    # the same items as output_item.done gave them (OpenAI re-encrypts the reasoning in
    # the last event: the last event's is kept, the one the API gave last)
    assert [i["id"] for i in whole["output"]] == [i["id"] for i in fold.items.values()]


def test_unknown_item_types_are_kept_and_read_past() -> None:
    """A web search call and an MCP approval request: no client tool to run, kept as sent."""
    searched = responses_api.parse_reply(folded(WEB_SEARCH))
    kinds = [i["type"] for i in searched.message["output"]]
    assert "web_search_call" in kinds
    assert kinds[-1] == "message"
    assert searched.message["output"] == last_response(WEB_SEARCH)["output"]
    assert searched.stop is Stop.END_TURN
    assert searched.steps == ("web_search_call",) * kinds.count("web_search_call")
    approval = body(MCP_APPROVAL)
    reply = responses_api.parse_reply(approval)
    assert reply.message["output"] == approval["output"]
    assert reply.tool_uses == ()


def test_a_function_call_is_a_tool_round_answered_by_its_call_id() -> None:
    recorded = body(TOOL_CALL)
    reply = responses_api.parse_reply(recorded)
    (item,) = recorded["output"]
    assert reply.stop is Stop.TOOL_USE
    (use,) = reply.tool_uses
    assert (use.id, use.name, use.input) == (
        item["call_id"],
        item["name"],
        json.loads(item["arguments"]),
    )
    assert responses_api.tool_uses(reply.message) == reply.tool_uses


# ---- control flow (CONSTRUCTED bodies in the recorded shape) ---------------------------


@pytest.mark.parametrize(
    ("built", "stop"),
    [
        (rw.response(rw.refusal_item()), Stop.REFUSAL),
        (
            rw.response(rw.text_item("half an"), status="incomplete", reason="content_filter"),
            Stop.REFUSAL,
        ),
        (
            rw.response(rw.text_item("half an"), status="incomplete", reason="max_output_tokens"),
            Stop.MAX_TOKENS,
        ),
        (rw.response(rw.reasoning_item(), rw.call_item("c1", "tool")), Stop.TOOL_USE),
        (rw.response(rw.text_item("done")), Stop.END_TURN),
    ],
)
def test_the_stop_map(built: dict[str, Any], stop: Stop) -> None:
    assert responses_api.parse_reply(built).stop is stop


@pytest.mark.parametrize("status", ["in_progress", "queued", "cancelled", "paused"])
def test_an_unknown_status_is_a_provider_error_naming_it(status: str) -> None:
    with pytest.raises(ProviderFailed, match=repr(status)):
        responses_api.parse_reply(rw.response(rw.text_item("x"), status=status))


def test_a_context_length_failure_is_context_too_long() -> None:
    failed = rw.response(status="failed")
    failed["error"] = {
        "code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model.",
    }
    with pytest.raises(ContextTooLong):
        responses_api.parse_reply(failed)


def test_a_stream_without_its_last_event_is_cut_short() -> None:
    fold = ResponseFold()
    for event in rw.events(rw.response(rw.text_item("an answer")))[:-1]:
        fold.add(event)
    with pytest.raises(ProviderUnavailable, match=r"before response\.completed"):
        fold.body()


def test_a_stream_of_an_unknown_item_type_keeps_it_and_goes_on() -> None:
    odd = {"id": "x_1", "type": "future_thing", "payload": {"a": [1, 2]}}
    built = rw.response(odd, rw.text_item("after it"))
    fold = ResponseFold()
    for event in rw.events(built):
        fold.add(event)
    reply = responses_api.parse_reply(fold.body())
    assert reply.message["output"][0] == odd
    assert reply.text == "after it"


def test_the_items_are_the_output_when_the_last_event_leaves_it_out() -> None:
    built = rw.response(rw.reasoning_item(), rw.text_item("answer"))
    fold = ResponseFold()
    for event in rw.events(built)[:-1]:
        fold.add(event)
    fold.add({"type": "response.completed", "response": {**built, "output": []}})
    assert fold.body()["output"] == built["output"]


def test_two_text_parts_stream_joined_as_the_reply_text() -> None:
    built = rw.response(rw.text_item("first part", 1), rw.text_item("second part", 2))
    texts: list[str] = []
    fold = ResponseFold(texts.append)
    for event in rw.events(built):
        fold.add(event)
    assert (
        "".join(texts) == responses_api.parse_reply(fold.body()).text == "first part\nsecond part"
    )


# ---- the request ----------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_the_request_is_stateless_with_instructions_tools_and_cache_key(
    server: WireServer, make: Make, stream: bool
) -> None:
    server.add(json_response(body(TEXT)), json_response(body(TEXT)))
    chosen = make(model="gpt-5-mini", system="be brief", max_tokens=99, stream=stream)
    spec = ToolSpec(
        "lookup", "looks up", {"type": "object", "properties": {"q": {"type": "string"}}}
    )
    await chosen.complete(QUESTION, [spec], 10)
    await chosen.complete([*QUESTION, {"role": "assistant", "output": []}], [spec], 10)
    sent = server.requests[0].body
    assert server.requests[0].path == "/v1/responses"
    assert sent["store"] is False
    assert sent["include"] == ["reasoning.encrypted_content"]
    assert sent["instructions"] == "be brief"
    assert sent["max_output_tokens"] == 99
    assert sent["input"] == QUESTION
    assert sent["tools"] == [
        {
            "type": "function",
            "name": "lookup",
            "description": "looks up",
            "parameters": spec.input_schema,
            "strict": False,
        }
    ]
    assert sent.get("stream", False) is stream
    key = sent["prompt_cache_key"]
    assert key.startswith("tk-")
    assert server.requests[1].body["prompt_cache_key"] == key
    assert make(prompt_cache=False).request(QUESTION, [], 5).get("prompt_cache_key") is None


async def test_a_context_length_error_response_is_context_too_long(
    server: WireServer, make: Make
) -> None:
    # CONSTRUCTED: OpenAI's 400 for an input past the context window.
    error = {
        "error": {
            "message": "Your input exceeds the context window of this model.",
            "type": "invalid_request_error",
            "param": "input",
            "code": "context_length_exceeded",
        }
    }
    server.add(json_response(error, 400))
    with pytest.raises(ContextTooLong):
        await make().complete(QUESTION, [], 10)


# ---- turns ----------------------------------------------------------------------------


async def test_a_recorded_four_call_tool_loop_sends_every_item_back_verbatim(
    server: WireServer, make: Make
) -> None:
    """OpenAI's gpt-5-mini, streamed: reasoning and a function call, two more function
    calls, then the answer. Each request carries every item the earlier responses gave,
    the encrypted reasoning of the first included, and each call's output under its id."""
    server.add(*streams(LOOP))
    tools = EchoTools(("calculator",))
    hooks = LocalHooks(reporter=lambda report: None)
    result = await run_turn("compute", provider=make(), toolset=tools, hooks=hooks)
    assert result.outcome is Outcome.FINISHED
    assert len(server.requests) == 4
    assert len(tools.calls) == 3
    outputs = [m["output"] for m in result.history if m.get("role") == "assistant"]
    reasoning = outputs[0][0]
    assert reasoning["type"] == "reasoning"
    assert reasoning["encrypted_content"]
    assert [i["type"] for o in outputs for i in o] == [
        "reasoning",
        *("function_call",) * 3,
        "message",
    ]
    for n in range(1, 4):
        sent = server.requests[n].body["input"]
        assert sent == responses_api.input_items(result.history)[: len(sent)]
        assert sent[1] == reasoning  # the encrypted reasoning came back as it was, every call
        call = outputs[n - 1][-1]
        assert {
            "type": "function_call_output",
            "call_id": call["call_id"],
            "output": f"calculator result {n}",
        } in sent
    assert bubbles(result)[-1]["text"] == responses_api.message_text(result.history[-1])


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_cut_answer_is_truncated_and_never_shown(
    server: WireServer, make: Make, stream: bool
) -> None:
    cut = rw.response(
        rw.reasoning_item(),
        rw.text_item("The answer is probab"),
        status="incomplete",
        reason="max_output_tokens",
    )
    server.add(json_response(cut))
    result, _hooks = await run(make(stream=stream))
    assert result.outcome is Outcome.TRUNCATED
    assert all("probab" not in str(m.get("text")) for m in result.state.to_json()["messages"])
    assert bubbles(result)[-1]["key"] == "errors.ai_truncated"


@pytest.mark.parametrize(
    "refused",
    [
        rw.response(rw.refusal_item()),
        rw.response(rw.text_item("I will n"), status="incomplete", reason="content_filter"),
    ],
    ids=["refusal-part", "content-filter"],
)
async def test_a_refusal_is_one_request_never_retried(
    server: WireServer, make: Make, refused: dict[str, Any]
) -> None:
    server.add(json_response(refused), json_response(body(TEXT)))
    result, _ = await run(make())
    assert result.outcome is Outcome.REFUSED
    assert len(server.requests) == 1
    assert bubbles(result)[-1]["key"] == "errors.ai_refused"


async def test_a_recorded_failed_stream_fails_the_turn(server: WireServer, make: Make) -> None:
    server.add(*streams(FAILED))
    result, _ = await run(make())
    assert result.outcome is Outcome.FAILED
    assert len(server.requests) == 1


async def test_a_reasoning_item_not_asked_for_is_still_sent_back(
    server: WireServer, make: Make
) -> None:
    """A reasoning item without encrypted content (the model kept none): sent back as is."""
    bare = {"id": "rs_bare", "type": "reasoning", "summary": []}
    server.add(
        json_response(rw.response(bare, rw.call_item("c1", "tool"))), json_response(body(TEXT))
    )
    result, _ = await run(make())
    assert result.outcome is Outcome.FINISHED
    assert server.requests[1].body["input"][1] == bare


async def test_a_recorded_responses_turn_replays_the_same(
    server: WireServer, make: Make, tmp_path: Path
) -> None:
    server.add(*streams(LOOP))
    hooks = LocalHooks(reporter=lambda report: None)
    tools = EchoTools(("calculator",))
    result = await run_turn("compute", provider=make(), toolset=tools, hooks=hooks)
    path = tmp_path / "trace.json"
    write_trace(result.trace, path)
    trace = read_trace(path)
    assert trace.wire == "openai-responses"
    assert [c.usage.cache_read_input_tokens for c in trace.calls if c.usage] == [
        responses_api.parse_usage(r["usage"]).cache_read_input_tokens
        for r in (c.response for c in trace.calls)
        if isinstance(r, dict)
    ]
    replayed = await replay(trace)
    assert first_difference(trace, replayed.trace) is None
    assert replayed.history == result.history


async def test_compaction_clears_and_summarises_function_call_outputs() -> None:
    """Clearing finds a Responses tool result (an item, not a message with a role) and puts
    the placeholder in its `output`; a summary's transcript reads the result too."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "look it up"}]
    for n in range(5):
        call = rw.call_item(f"c{n}", "lookup", '{"q": 1}')
        history.append({"role": "assistant", "output": [rw.reasoning_item(n), call]})
        history += responses_api.tool_results([ToolResult(f"c{n}", f"found {n} " + "x" * 50)])
    window = Window(Compaction(window=100_000), None, responses_api.WIRE, {"model": "gpt-5"})
    asked: list[str] = []

    async def summarise(text: str) -> str | None:
        asked.append(text)
        return None

    shrunk = await window.compact(history, summarise, forced=True)
    assert shrunk is not None
    assert shrunk.cleared == 4
    sent = window.request(history)
    outputs = [m for m in sent if m.get("type") == "function_call_output"]
    assert [o["output"].startswith("[This result of lookup") for o in outputs] == [
        True,
        True,
        True,
        True,
        False,
    ]
    transcript = asking.transcript(history, responses_api.WIRE, {"c0": "lookup"})
    assert "Result of lookup: found 0" in transcript


def test_the_wire_cost_bench_reads_both_wires_alike() -> None:
    """bench/responses_wire.py runs (tiny), and both wires' readings give the same texts."""
    from bench import responses_wire

    found = responses_wire.measure(calls=3, rounds=2)
    assert found["chat"] > 0
    assert found["responses"] > 0


def responses_rows(folder: Path) -> list[dict[str, Any]]:
    """Every real (not suspect_synthetic) Responses recording of `folder`, of any server."""
    rows = json.loads((folder / "index.json").read_text("utf-8"))["interactions"]
    return [r for r in rows if r["api"] == "responses" and not r["suspect_synthetic"]]


def read_through(folder: Path, row: dict[str, Any]) -> None:
    """A recording through the branch its ending takes: a body or each stream it holds is
    read to the reply its status says (kept whole), or to the error it names."""
    response = recording(row["file"], folder)["response"]
    bodies = []
    if response.get("events"):
        for text in rw.recorded_streams(response["events"]):
            fold = ResponseFold()
            for line in text.split("\n\n"):
                if line:
                    fold.feed(line.removeprefix("data: "))
            bodies.append(fold.body())
    else:
        bodies.append(response["body"])
    for found in bodies:
        if found.get("status") in responses_api.ENDED:
            reply = responses_api.parse_reply(found)
            assert reply.message["output"] == found["output"]
        else:
            with pytest.raises(ProviderFailed, match=repr(found.get("status"))):
                responses_api.parse_reply(found)


@pytest.mark.parametrize("row", responses_rows(RECORDED), ids=lambda r: r["file"])
def test_every_recorded_responses_exchange_reads_through_its_branch(row: dict[str, Any]) -> None:
    if row["kind"] == "error":
        with pytest.raises(ProviderFailed):
            read_through(RECORDED, row)
    else:
        read_through(RECORDED, row)


def test_every_responses_exchange_of_the_corpus_reads_through_its_branch() -> None:
    """The same over the larger corpus, when TURNKEEPER_REAL_RESPONSES names it; a stream
    the recording cut short (`stream_complete: false`) is a provider error, never a reply."""
    folder = corpus()
    for row in responses_rows(folder):
        if row["kind"] == "error" or row.get("stream_complete") is False:
            with pytest.raises((ProviderFailed, ProviderUnavailable)):
                read_through(folder, row)
        else:
            read_through(folder, row)
