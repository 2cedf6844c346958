"""A fake Messages API that streams, for workload G (`python -m bench.live_fake`).

It speaks the Messages API's streaming wire over plain HTTP/1.1 (the response's
end is the connection's close): `message_start`, `content_block_start`,
`content_block_delta` (`text_delta`) piece by piece, `content_block_stop`,
`message_delta`, `message_stop`. The turn's user text says what to stream:
`key=<id> pieces=<n> gap=<ms> wait=<ms>`; the answer is `answer(n)`, cut into
n pieces, the first `wait` ms after the request (the model's time to its first
token) and piece k due `k × gap` ms after the first (paced by the clock, so a
late wake-up sends what is due at once). Right after each piece is written to
the socket it notes `time.monotonic()` (CLOCK_MONOTONIC: one clock for every
process on the machine) under the key; `GET /stamps` answers them all as JSON.

Written on asyncio's streams, with no web framework, so that the fake's own
cost per piece stays small beside what it measures. It prints `ready <port>`
once it listens.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from typing import Any

MODEL = "claude-fake"
ASK = re.compile(r"key=(\S+) pieces=(\d+) gap=([\d.]+) wait=([\d.]+)")
stamps: dict[str, list[float]] = {}
"""When each piece of each key's answer was written to its socket."""


def answer(pieces: int) -> str:
    """The answer of `pieces` pieces (one word each, about a token)."""
    return "".join(f"w{i} " for i in range(pieces)).rstrip() + "."


def cut(pieces: int) -> list[str]:
    """`answer(pieces)` in its pieces."""
    words = [f"w{i} " for i in range(pieces)]
    words[-1] = words[-1].rstrip() + "."
    return words


def event(kind: str, body: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **body})}\n\n".encode()


def opening() -> bytes:
    message: dict[str, Any] = {
        "id": "msg_live",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    block = {"index": 0, "content_block": {"type": "text", "text": ""}}
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
    return head + event("message_start", {"message": message}) + event("content_block_start", block)


def closing(pieces: int) -> bytes:
    delta = {"stop_reason": "end_turn", "stop_sequence": None}
    return (
        event("content_block_stop", {"index": 0})
        + event("message_delta", {"delta": delta, "usage": {"output_tokens": pieces}})
        + event("message_stop", {})
    )


def piece(text: str) -> bytes:
    return event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}})


async def stream(writer: asyncio.StreamWriter, request: dict[str, Any]) -> None:
    said = request["messages"][-1]["content"]
    text = said if isinstance(said, str) else " ".join(b.get("text", "") for b in said)
    found = ASK.search(text)
    key, pieces = (found[1], int(found[2])) if found else ("", 1)
    gap, wait = (float(found[3]) / 1e3, float(found[4]) / 1e3) if found else (0.0, 0.0)
    writer.write(opening())
    await writer.drain()
    await asyncio.sleep(wait)
    sent = stamps.setdefault(key, [])
    first = time.monotonic()
    for n, word in enumerate(cut(pieces)):
        due = first + n * gap - time.monotonic()
        if due > 0:
            await asyncio.sleep(due)
        writer.write(piece(word))
        sent.append(time.monotonic())
        if n == 0:
            await writer.drain()
    writer.write(closing(pieces))
    await writer.drain()


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        length = re.search(r"(?i)content-length:\s*(\d+)", head)
        body = await reader.readexactly(int(length[1])) if length else b""
        if head.startswith("GET /stamps"):
            data = json.dumps(stamps).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
            writer.write(f"content-length: {len(data)}\r\nconnection: close\r\n\r\n".encode())
            writer.write(data)
        else:
            await stream(writer, json.loads(body))
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def main() -> None:
    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096, limit=2**22)
    port = server.sockets[0].getsockname()[1]
    print(f"ready {port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
