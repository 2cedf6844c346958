"""A fake Messages API that bills the prompt cache as Anthropic documents it, over HTTP.

What it bills, per request (the prompt caching guide's rules):

- The prompt is a sequence of blocks in the cache's order: every tool
  definition, the system prompt's blocks, then every message's content blocks
  (a string content is one text block). A block marked `cache_control` is a
  breakpoint (at most 4, else a 400 as the API answers); a top-level
  `cache_control` (automatic caching) puts one on the last block.
- Read: the longest prefix written earlier and still alive that this request
  repeats, found at a breakpoint or up to 20 blocks before one.
- Write: the rest of the prompt up to the last breakpoint, split by the TTL
  of the breakpoint each part ends at; a prefix shorter than the model's
  minimum (1,024 tokens) is not cached at all.
- Input: whatever comes after the last breakpoint (all of it without one).
- An entry lives 5 minutes (or 1 hour) from its last write or read.

Tokens are counted by a deterministic approximation, the same for everybody:
a block's JSON (keys sorted, no spaces, its `cache_control` left out) in
characters ÷ 4, rounded up. The model's answers come from `reply`: tool uses
until the turn has had its iterations, then a text answer.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from .local_server import LocalServer

CHARS_PER_TOKEN = 4
MAX_BREAKPOINTS = 4
LOOKBACK = 20
MIN_CACHEABLE = 1_024
TTL_SECONDS = {"5m": 300.0, "1h": 3_600.0}
WRITE_MULTIPLE = {"5m": 1.25, "1h": 2.0}
READ_MULTIPLE = 0.1
UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


def tokens(block: Any) -> int:
    """A block's tokens: its JSON without `cache_control`, in characters ÷ 4, rounded up."""
    return math.ceil(len(_canonical(block)) / CHARS_PER_TOKEN)


def _canonical(block: Any) -> str:
    if isinstance(block, dict):
        block = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(block, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Block:
    """One block of a prompt: the key of the prefix ending with it, its tokens, its mark."""

    key: str
    tokens: int
    ttl: str | None
    """The TTL of its breakpoint, or None when it is not one."""


def prompt(body: dict[str, Any]) -> list[Block]:
    """The request's blocks in the cache's order, each keyed by the whole prefix up to it."""
    parts = [("tool", t) for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str):
        parts.append(("system", {"type": "text", "text": system}))
    elif isinstance(system, list):
        parts += [("system", b) for b in system]
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        parts += [(str(message.get("role")), b) for b in content or []]
    marks = [_ttl(block) for _, block in parts]
    automatic = body.get("cache_control")
    cacheable = [i for i, (_, b) in enumerate(parts) if _cacheable(b)]
    if isinstance(automatic, dict) and cacheable:  # automatic caching: the last cacheable block
        marks[cacheable[-1]] = marks[cacheable[-1]] or str(automatic.get("ttl", "5m"))
    chain = hashlib.sha256(str(body.get("model")).encode())
    blocks = []
    for (role, block), ttl in zip(parts, marks, strict=True):
        chain.update(f"{role}:{_canonical(block)}".encode())
        blocks.append(Block(chain.hexdigest(), tokens(block), ttl))
    return blocks


def _cacheable(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") not in UNMARKABLE


def _ttl(block: Any) -> str | None:
    mark = block.get("cache_control") if isinstance(block, dict) else None
    return str(mark.get("ttl", "5m")) if isinstance(mark, dict) else None


@dataclass
class Bill:
    """What one request was billed, in tokens."""

    total: int
    input: int = 0
    read: int = 0
    written: dict[str, int] = field(default_factory=lambda: {"5m": 0, "1h": 0})
    breakpoints: int = 0

    def equivalents(self) -> float:
        """Billed input in input-token equivalents at the provider's multiples."""
        writes = sum(WRITE_MULTIPLE[ttl] * n for ttl, n in self.written.items())
        return self.input + writes + READ_MULTIPLE * self.read

    def usage(self, output_tokens: int) -> dict[str, Any]:
        """The response's `usage`, as the API reports it."""
        return {
            "input_tokens": self.input,
            "cache_creation_input_tokens": sum(self.written.values()),
            "cache_read_input_tokens": self.read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.written["5m"],
                "ephemeral_1h_input_tokens": self.written["1h"],
            },
            "output_tokens": output_tokens,
        }


class TooManyBreakpoints(Exception):
    """A request with more than four `cache_control` blocks (the API answers 400)."""


class PromptCache:
    """The cache of one organisation: each written prefix's key, its TTL and its expiry."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.entries: dict[str, tuple[str, float]] = {}

    def bill(self, body: dict[str, Any]) -> Bill:
        """Bill one request; write the entries it writes, refresh the one it reads."""
        blocks = prompt(body)
        marked = [i for i, b in enumerate(blocks) if b.ttl is not None]
        if len(marked) > MAX_BREAKPOINTS:
            raise TooManyBreakpoints(f"{len(marked)} blocks with cache_control; at most 4")
        ends = list(itertools.accumulate(b.tokens for b in blocks))
        bill = Bill(total=ends[-1] if ends else 0, breakpoints=len(marked))
        now = self.clock()
        hit = self._hit(blocks, marked, now)
        if hit >= 0:
            ttl, _ = self.entries[blocks[hit].key]
            self.entries[blocks[hit].key] = (ttl, now + TTL_SECONDS[ttl])
            bill.read = ends[hit]
        covered = self._write(blocks, marked, ends, hit, bill, now)
        bill.input = bill.total - covered
        return bill

    def _hit(self, blocks: list[Block], marked: list[int], now: float) -> int:
        """The last block of the longest live prefix seen from a breakpoint, or -1."""
        best = -1
        for b in marked:
            for i in range(b, max(-1, b - LOOKBACK), -1):
                entry = self.entries.get(blocks[i].key)
                if entry is not None and entry[1] > now:
                    best = max(best, i)
                    break
        return best

    def _write(
        self, blocks: list[Block], marked: list[int], ends: list[int], hit: int, bill: Bill,
        now: float,
    ) -> int:  # fmt: skip
        """Write an entry at every breakpoint past the hit whose prefix is long enough,
        billing each stretch at its breakpoint's TTL; the tokens read or written."""
        covered = bill.read
        for b in marked:
            ttl = blocks[b].ttl
            if b <= hit or ends[b] < MIN_CACHEABLE or ttl is None:
                continue
            bill.written[ttl] += ends[b] - covered
            covered = ends[b]
            self.entries[blocks[b].key] = (ttl, now + TTL_SECONDS[ttl])
        return covered


# ---- the model's answers, and the server ----------------------------------------


def calls_this_turn(messages: list[dict[str, Any]]) -> int:
    """Model calls the turn has had: assistant messages since the last question (a user
    message that carries no tool result)."""
    calls = 0
    for message in reversed(messages):
        if message.get("role") == "assistant":
            calls += 1
        elif not _carries_results(message):
            break
    return calls


def _carries_results(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def reply(body: dict[str, Any], iterations: int, tool: str) -> dict[str, Any]:
    """The model's answer: a use of `tool` until the turn's last call, then a text."""
    messages = body.get("messages") or []
    done = calls_this_turn(messages)
    if done < iterations - 1:
        replies = sum(1 for m in messages if m.get("role") == "assistant")
        use = {"type": "tool_use", "id": f"toolu_{replies:06d}", "name": tool}
        content: list[dict[str, Any]] = [{**use, "input": {"page": done + 1}}]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": "All pages read."}], "end_turn"
    return {
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
    }


class CacheApi(LocalServer):
    """`PromptCache` and `reply` behind POST /v1/messages, on 127.0.0.1; `bills` holds
    every request's bill, in order."""

    def __init__(
        self, iterations: int, tool: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.cache = PromptCache(clock)
        self.iterations, self.tool = iterations, tool
        self.bills: list[Bill] = []
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        super().__init__(_handler(self))

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and body of the answer to one request."""
        with self._lock:
            try:
                bill = self.cache.bill(body)
            except TooManyBreakpoints as e:
                error = {"type": "invalid_request_error", "message": str(e)}
                return 400, {"type": "error", "error": error}
            self.bills.append(bill)
            self.bodies.append(body)
            number = len(self.bills)
        answer = reply(body, self.iterations, self.tool)
        usage = bill.usage(sum(tokens(b) for b in answer["content"]))
        return 200, {"id": f"msg_{number:06d}", **answer, "usage": usage}


def _handler(api: CacheApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.split("?")[0] == "/v1/messages":
                status, answer = api.answer(body)
            else:
                status, answer = 404, {"type": "error", "error": {"type": "not_found_error"}}
            streamed = status == 200 and body.get("stream") is True
            data = (sse(answer) if streamed else json.dumps(answer)).encode()
            self.send_response(status)
            self.send_header(
                "content-type", "text/event-stream" if streamed else "application/json"
            )
            self.send_header("content-length", str(len(data)))
            self.send_header("request-id", f"req_{len(api.bills):06d}")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def sse(message: dict[str, Any]) -> str:
    """A whole message as the API streams it: its usage first, each block, the stop last."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message["content"]):
        events += _block_events(index, block)
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    output = {"output_tokens": usage["output_tokens"]}
    events += [{"type": "message_delta", "delta": stop, "usage": output}, {"type": "message_stop"}]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def _block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    if block["type"] == "tool_use":
        opened = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        opened = {**block, "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    return [
        {"type": "content_block_start", "index": index, "content_block": opened},
        {"type": "content_block_delta", "index": index, "delta": delta},
        {"type": "content_block_stop", "index": index},
    ]
