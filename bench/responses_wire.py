"""A-wire, Responses beside Chat Completions: what reading one streamed call costs.

`python -m bench.responses_wire [--calls N] [--rounds R]` prints two rows and their ratio.
The same fake model answers in both wire formats: N calls, each a ~120-word answer and
one function call (the last an answer alone), streamed as its API streams it (OpenAI's
recorded shapes: a Chat Completions chunk per word with `[DONE]`; the Responses events,
`response.completed` carrying the whole response again). A row is the CPU time per call
of the adapter's own reading: every event's data through its fold (`ChatFold`,
`ResponseFold`), the folded body through `parse_reply`, the answer's text to a sink. The
server's lines are read once before the clock starts, so both rows read the same bytes
that a socket gave them. Rounds alternate the two; the ratio is the median of per-round
ratios. Target (issue 50): Responses ≤ 1.2× Chat Completions.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from turnkeeper.providers import chat_api, responses_api
from turnkeeper.providers.chat_stream import ChatFold
from turnkeeper.providers.responses_stream import ResponseFold

from .method import median

TARGET = 1.2
WORDS = [f"word{n % 37} " for n in range(120)]
ARGUMENTS = json.dumps({"query": "the rates of this week", "limit": 10})
USAGE_CHAT = {"prompt_tokens": 1200, "completion_tokens": 160, "total_tokens": 1360}
USAGE_RESPONSES = {"input_tokens": 1200, "output_tokens": 160, "total_tokens": 1360}


def chat_stream(n: int, last: bool) -> list[str]:
    """One call's Chat Completions chunks (their `data`), as OpenAI streams them."""
    head = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return json.dumps({**head, "choices": [choice]})

    data = [chunk({"role": "assistant", "content": "", "refusal": None})]
    data += [chunk({"content": w}) for w in WORDS]
    if not last:
        call = {"index": 0, "id": f"call_{n}", "type": "function"}
        data.append(
            chunk({"tool_calls": [{**call, "function": {"name": "look_up", "arguments": ""}}]})
        )
        for half in (ARGUMENTS[:20], ARGUMENTS[20:]):
            data.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": half}}]}))
    data.append(chunk({}, "stop" if last else "tool_calls"))
    data.append(json.dumps({**head, "choices": [], "usage": USAGE_CHAT}))
    return [*data, "[DONE]"]


def responses_stream(n: int, last: bool) -> list[str]:
    """One call's Responses API events (their `data`), as OpenAI streams them."""
    text = "".join(WORDS)
    message = {"id": f"msg_{n}", "type": "message", "status": "completed", "role": "assistant"}
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    call = {"id": f"fc_{n}", "type": "function_call", "status": "completed",
            "arguments": ARGUMENTS, "call_id": f"call_{n}", "name": "look_up"}  # fmt: skip
    output = [{**message, "content": [part]}] + ([] if last else [call])
    response = {"id": f"resp_{n}", "object": "response", "created_at": 1, "model": "m",
                "status": "completed", "error": None, "incomplete_details": None,
                "output": output, "usage": USAGE_RESPONSES}  # fmt: skip
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    at = {"item_id": f"msg_{n}", "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**message, "content": []},
        },
        {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
        *({"type": "response.output_text.delta", **at, "delta": w, "logprobs": []} for w in WORDS),
        {"type": "response.output_text.done", **at, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **at, "part": part},
        {"type": "response.output_item.done", "output_index": 0, "item": output[0]},
    ]
    if not last:
        fc = {"item_id": f"fc_{n}", "output_index": 1}
        events += [
            {
                "type": "response.output_item.added",
                "output_index": 1,
                "item": {**call, "arguments": ""},
            },
            {"type": "response.function_call_arguments.delta", **fc, "delta": ARGUMENTS[:20]},
            {"type": "response.function_call_arguments.delta", **fc, "delta": ARGUMENTS[20:]},
            {"type": "response.function_call_arguments.done", **fc, "arguments": ARGUMENTS},
            {"type": "response.output_item.done", "output_index": 1, "item": call},
        ]
    events.append({"type": "response.completed", "response": response})
    return [json.dumps({**e, "sequence_number": s}) for s, e in enumerate(events)]


Read = Callable[[list[str]], Any]


def read_chat(data: list[str]) -> Any:
    fold = ChatFold(_sink)
    for d in data:
        fold.feed(d)
    return chat_api.parse_reply(fold.body())


def read_responses(data: list[str]) -> Any:
    fold = ResponseFold(_sink)
    for d in data:
        fold.feed(d)
    return responses_api.parse_reply(fold.body())


def _sink(piece: str) -> None:
    """The answer's text goes nowhere: a reader's queue costs both rows the same."""


def per_call(read: Read, streams: list[list[str]]) -> float:
    """CPU µs per call to read every stream once."""
    start = time.process_time_ns()
    for data in streams:
        read(data)
    return (time.process_time_ns() - start) / 1000 / len(streams)


def measure(calls: int, rounds: int) -> dict[str, Any]:
    """Both rows' CPU µs per call (medians) and the median of per-round ratios."""
    chat = [chat_stream(n, n == calls - 1) for n in range(calls)]
    responses = [responses_stream(n, n == calls - 1) for n in range(calls)]
    assert [r.text for r in map(read_chat, chat)] == [
        r.text for r in map(read_responses, responses)
    ]
    chat_us, responses_us, ratios = [], [], []
    for r in range(rounds):
        order = [(read_chat, chat), (read_responses, responses)][:: 1 if r % 2 else -1]
        got = {read: per_call(read, streams) for read, streams in order}
        chat_us.append(got[read_chat])
        responses_us.append(got[read_responses])
        ratios.append(got[read_responses] / got[read_chat])
    return {"chat": median(chat_us), "responses": median(responses_us), "ratio": median(ratios)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.responses_wire", description=__doc__)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    found = measure(args.calls, args.rounds)
    rounds, calls = args.rounds, args.calls
    print(f"| wire | CPU µs per call, parse and fold (median of {rounds} rounds, N = {calls}) |")
    print("|---|---|")
    print(f"| Chat Completions (`ChatFold`, `chat_api.parse_reply`) | {found['chat']:.1f} |")
    print(f"| Responses (`ResponseFold`, `responses_api.parse_reply`) | {found['responses']:.1f} |")
    met = "met" if found["ratio"] <= TARGET else "**missed**"
    print(f"\nResponses ÷ Chat Completions: {found['ratio']:.3f}× (target ≤ {TARGET}×): {met}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
