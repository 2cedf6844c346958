"""A fake model server with a context window, on both wire formats, that refuses as the real
APIs do.

It answers `POST /v1/messages` (the Anthropic Messages API) and `POST
/v1/chat/completions` (OpenAI-compatible) over a real socket, so the official SDK
clients talk to it. It counts a request's tokens as its JSON's characters over
`chars_per_token` (the messages, the system prompt and the tools), and refuses one
over `window` exactly as the APIs do: Anthropic's 400 `invalid_request_error` "prompt
is too long: N tokens > 6000 maximum"; OpenAI's 400 with code
`context_length_exceeded`. Every answer is a plain JSON body (the adapters read one
for a streaming request too) with the counted tokens as its usage.

The model it plays: a question with "notes" in it asks for the `read_notes` tool,
then answers "Read the notes." (asked to "read the notes N times", it reads them N
times in the one turn); a question about the code word answers with the
code word if the request holds it anywhere ("the code word is X"), else "I do not
know."; anything else is answered "Noted." A request for a summary (turnkeeper's,
`turn/summary.py`) is answered with every sentence of it that says "remember", so a
fact told early survives every summary, and only that.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from bench.local_server import LocalServer

from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.turn import summary
from turnkeeper.wire import ToolSpec

NOTES = ("These are the notes of the day; nothing in them matters to the code word. " * 27)[:2000]
"""About 2,000 characters: what the `read_notes` tool returns every time."""

READ_NOTES = FunctionToolset(
    [Tool(ToolSpec("read_notes", "Read today's notes."), lambda args: NOTES)]
)

CODE_WORD = re.compile(r"the code word is (\w+)", re.IGNORECASE)
TIMES = re.compile(r"read the notes (\d+) times")


class WindowServer(LocalServer):
    """The fake model server (`with WindowServer(6000) as server:`)."""

    def __init__(self, window: int, *, chars_per_token: float = 4.0) -> None:
        self.window = window
        self.chars_per_token = chars_per_token
        self.requests: list[dict[str, Any]] = []
        """Every request body, in order."""
        self.tokens: list[int] = []
        """Every request's counted tokens, in order."""
        self.refused = 0
        self.summaries = 0
        self._lock = threading.Lock()
        super().__init__(self._handler())

    def count(self, body: dict[str, Any]) -> int:
        counted = {k: body.get(k) for k in ("messages", "system", "tools")}
        return int(len(json.dumps(counted, ensure_ascii=False)) / self.chars_per_token) + 1

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        chat = path.endswith("/chat/completions")
        tokens = self.count(body)
        with self._lock:
            self.requests.append(body)
            self.tokens.append(tokens)
            if tokens > self.window:
                self.refused += 1
                return 400, refusal(chat, tokens, self.window)
        said = _said(body["messages"])
        if said.startswith(summary.ASK[:40]):
            with self._lock:
                self.summaries += 1
            return 200, reply(chat, tokens, text=_summary(said))
        return 200, _turn(chat, tokens, body["messages"])

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length))
                status, answer = fake.answer(self.path, body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def refusal(chat: bool, tokens: int, window: int) -> dict[str, Any]:
    """What each API answers a request longer than its window."""
    if chat:
        message = (
            f"This model's maximum context length is {window} tokens. However, your messages"
            f" resulted in {tokens} tokens. Please reduce the length of the messages."
        )
        return {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
    message = f"prompt is too long: {tokens} tokens > {window} maximum"
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def reply(
    chat: bool, tokens: int, *, text: str = "", use: str | None = None, n: int = 0
) -> dict[str, Any]:
    """A response body: `text`, or a call of the tool `use`."""
    if chat:
        calls = [
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": use, "arguments": "{}"},
            }
        ]
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if use:
            message["tool_calls"] = calls
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "model": "fake-window",
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if use else "stop"}
            ],
            "usage": {
                "prompt_tokens": tokens,
                "completion_tokens": 12,
                "total_tokens": tokens + 12,
            },
        }
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    if use:
        content.append({"type": "tool_use", "id": f"toolu_{n}", "name": use, "input": {}})
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": "fake-window",
        "content": content,
        "stop_reason": "tool_use" if use else "end_turn",
        "usage": {"input_tokens": tokens, "output_tokens": 12},
    }


def _turn(chat: bool, tokens: int, messages: list[dict[str, Any]]) -> dict[str, Any]:
    last = messages[-1]
    question = last.get("content") if last.get("role") == "user" else None
    if not isinstance(question, str):  # a tool's result: read again, or answer
        asked = next(
            m["content"]
            for m in reversed(messages)
            if m["role"] == "user" and isinstance(m["content"], str)
        )
        times = TIMES.search(asked)
        done = len(messages) - max(i for i, m in enumerate(messages) if m["content"] == asked)
        if times and done < 2 * int(times.group(1)):  # a use and its result per reading
            return reply(chat, tokens, use="read_notes", n=len(messages))
        return reply(chat, tokens, text="Read the notes.")
    if "code word" in question and "?" in question:
        found = CODE_WORD.findall(json.dumps(messages))
        said = f"The code word is {found[-1]}." if found else "I do not know."
        return reply(chat, tokens, text=said)
    if "notes" in question:
        return reply(chat, tokens, use="read_notes", n=len(messages))
    return reply(chat, tokens, text="Noted.")


def _said(messages: list[dict[str, Any]]) -> str:
    content = messages[-1].get("content")
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return content if isinstance(content, str) else ""


def _summary(asked: str) -> str:
    """Every sentence that says "remember", once each: a faithful, tiny summary."""
    sentences = re.findall(r"[^.\n]*remember[^.\n]*\.", asked, re.IGNORECASE)
    kept = list(dict.fromkeys(s.strip() for s in sentences if "summary" not in s.lower()))
    return " ".join(kept) or "Nothing to remember."
