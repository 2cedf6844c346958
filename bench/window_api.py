"""A fake model API with a context window, on both wire formats, for the compaction workload.

It answers `POST /v1/messages` (Anthropic Messages) and `POST /v1/chat/completions`
(OpenAI-compatible) on 127.0.0.1, with no delay, so the official SDKs talk to it. A
request's tokens are its JSON's characters ÷ 4 (the messages, the system prompt and the
tools, the same for everybody); one over `window` is refused as the real APIs refuse it:
Anthropic's 400 `invalid_request_error` "prompt is too long: N tokens > 20000 maximum",
OpenAI's 400 with code `context_length_exceeded`. A refused request is not billed; an
answered one bills its tokens as input.

The model it plays: a question asks for the request's first tool; the tool's result is
answered with a short text; a request for turnkeeper's summary (`turn/summary.py`) is
answered with a short summary. A streamed Messages request is answered as the API
streams (`cache_api.sse`); a chat completions one gets the whole JSON body. Each
question names its turn ("… for day N."), so every bill is put to the turn it was
made in; a summary's to the turn of the next request.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from turnkeeper.turn import summary

from .cache_api import sse
from .local_server import LocalServer

CHARS_PER_TOKEN = 4
DAY = re.compile(r"for day (\d+)\.")
SUMMARY = "The user asked every day for that day's notes; each time they were read."


@dataclass
class Bill:
    """One answered request: the turn it was made in (None: a summary's, not known yet)
    and its input tokens."""

    turn: int | None
    tokens: int


class WindowApi(LocalServer):
    """The fake (`with WindowApi(20_000) as api:`); `bills` holds every answered request's
    bill in order, `refusals` the turn of every refused one."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.bills: list[Bill] = []
        self.refusals: list[int | None] = []
        self._lock = threading.Lock()
        super().__init__(_handler(self))

    def per_turn(self, turns: int) -> list[int]:
        """The input tokens billed in each turn, 1 to `turns` (index 0 is turn 1)."""
        billed = [0] * (turns + 1)
        waiting = 0
        for bill in self.bills:
            if bill.turn is None:
                waiting += bill.tokens
            elif 0 < bill.turn <= turns:
                billed[bill.turn] += bill.tokens + waiting
                waiting = 0
        return billed[1:]

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and body of the answer to one request."""
        chat = path.endswith("/chat/completions")
        messages = body.get("messages") or []
        tokens = count(body)
        asked = said(messages[-1]) if messages else ""
        turn = None if asked.startswith(summary.ASK[:40]) else day(messages)
        with self._lock:
            if tokens > self.window:
                self.refusals.append(turn)
                return 400, refusal(chat, tokens, self.window)
            self.bills.append(Bill(turn, tokens))
            n = len(self.bills)
        if turn is None:
            return 200, reply(chat, tokens, n, text=SUMMARY)
        if answers_a_tool(messages[-1]):
            return 200, reply(chat, tokens, n, text=f"Read the notes for day {turn}.")
        return 200, reply(chat, tokens, n, use=first_tool(body))


def count(body: dict[str, Any]) -> int:
    """A request's tokens: its messages', system prompt's and tools' JSON, in characters ÷ 4."""
    counted = {k: body.get(k) for k in ("messages", "system", "tools")}
    return len(json.dumps(counted, ensure_ascii=False)) // CHARS_PER_TOKEN + 1


def said(message: dict[str, Any]) -> str:
    """A message's text (a string content, or its text blocks joined)."""
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return content if isinstance(content, str) else ""


def day(messages: list[dict[str, Any]]) -> int | None:
    """The turn of a request: the day the newest question that names one asks about."""
    for message in reversed(messages):
        if message.get("role") == "user":
            found = DAY.findall(said(message))
            if found:
                return int(found[-1])
    return None


def answers_a_tool(message: dict[str, Any]) -> bool:
    """Whether the request's last message carries a tool's result (either wire)."""
    if message.get("role") == "tool":
        return True
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def first_tool(body: dict[str, Any]) -> str:
    tool = (body.get("tools") or [{}])[0]
    return str(tool.get("function", tool).get("name", "read_notes"))


def refusal(chat: bool, tokens: int, window: int) -> dict[str, Any]:
    """What each API answers a request longer than its window."""
    if chat:
        message = (
            f"This model's maximum context length is {window} tokens. However, your messages"
            f" resulted in {tokens} tokens. Please reduce the length of the messages."
        )
        error = {"message": message, "type": "invalid_request_error", "param": "messages"}
        return {"error": {**error, "code": "context_length_exceeded"}}
    message = f"prompt is too long: {tokens} tokens > {window} maximum"
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def reply(chat: bool, tokens: int, n: int, *, text: str = "", use: str = "") -> dict[str, Any]:
    """A response body: `text`, or a call of the tool `use` with no arguments."""
    if chat:
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if use:
            call = {"name": use, "arguments": "{}"}
            message["tool_calls"] = [{"id": f"call_{n}", "type": "function", "function": call}]
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if use else "stop"}
        usage = {"prompt_tokens": tokens, "completion_tokens": 12, "total_tokens": tokens + 12}
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 0,
            "model": "fake-window",
            "choices": [choice],
            "usage": usage,
        }
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    if use:
        content.append({"type": "tool_use", "id": f"toolu_{n:06d}", "name": use, "input": {}})
    return {
        "id": f"msg_{n:06d}",
        "type": "message",
        "role": "assistant",
        "model": "fake-window",
        "content": content,
        "stop_reason": "tool_use" if use else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": tokens, "output_tokens": 12},
    }


def _handler(api: WindowApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?")[0]
            if path.endswith(("/messages", "/chat/completions")):
                status, answer = api.answer(path, body)
            else:
                status, answer = 404, {"type": "error", "error": {"type": "not_found_error"}}
            streamed = status == 200 and body.get("stream") is True and "content" in answer
            data = (sse(answer) if streamed else json.dumps(answer)).encode()
            self.send_response(status)
            kind = "text/event-stream" if streamed else "application/json"
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
