"""The benchmark suite (bench/) still runs end to end; tiny sizes, no timing asserted."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PEERS = ("pydantic_ai", "agents", "langgraph", "langchain_core", "langchain_openai", "anthropic")
HEADLINES = (
    "| A, N = 2 | CPU µs per model call |",
    "| A, N = 2 | sync tool ÷ async tool |",
    "| A, N = 2 | pydantic-ai ÷ turnkeeper |",
    "| A, N = 2 | openai-agents ÷ turnkeeper |",
    "| A, N = 2 | langgraph ÷ turnkeeper |",
    "| A-wire, N = 2 |",
    "| B, K = 5 | wall ÷ ideal (0.30 s) |",
    "| B, K = 5 | RSS per in-flight turn |",
    "| B-store, K = 5 | iterations per second, one process |",
    "| B, K = 5, as `serve` runs it | wall ÷ ideal (0.30 s) |",
    "| B-store, K = 5, `serve`'s GC policy | iterations per second, one process |",
    "| B-store, K = 5, limits set ÷ none | CPU µs per iteration | ≤ 1.05× |",
    "| B-store, K = 5, limits set ÷ none, `serve`'s GC policy | CPU µs per iteration | ≤ 1.05× |",
    "| C, no store |",
    "| C, SQLite | µs / iteration at 11–20 ÷ at 1–10 |",
    "| C, PostgreSQL |",
    "| D | requests / s ÷ bare Starlette |",
    "| Scale-out, K = 5, 2 slots per worker | turns/s, two workers ÷ one |",
    "| Scale-out, K = 5 | turns not run exactly once | 0 | 0 | met |",
    "| Prompt cache, 3 iterations | billed input ÷ uncached: turnkeeper defaults (pydantic-ai "
    "defaults; caching on) | ≤ 0.25 | 0.",
    "| G, SQLite, `serve` | ms from the model's first text byte to the reader's first `text.delta`",
    "| G, PostgreSQL, `serve --no-worker` + worker | ms from the model's first text byte",
    "| G, a 1,000-piece answer over ~1 s | store writes of its text (most of any run) | ≤ 25 |",
    "| G, 5 streams at once, one `serve` |",
    "| Compaction, 16 turns, 4,000-token window | turnkeeper's turns finished | 16 of 16 "
    "| 16 of 16 | met |",
    "| Compaction, 16 turns, 4,000-token window | input billed per turn, median of the last 4 ÷ "
    "of turns 6–10 | ≤ 1.3 | 1.",
    "| Compaction, 16 turns, 4,000-token window | turns finished before the first failure: "
    "pydantic-ai; openai-agents; langgraph | for comparison | ",
)
CONTENDERS = (
    "bare loop (baseline)",
    "turnkeeper `run_turn`",
    "turnkeeper `run_turn`, sync tool",
    "turnkeeper `run_turn`, hooks that keep nothing, `serve`'s GC policy",
    "pydantic-ai `Agent.run`",
    "openai-agents `Runner.run`",
    "langgraph `create_react_agent`",
    "anthropic SDK tool runner",
    "turnkeeper `run_turn`, `AnthropicProvider`",
    "turnkeeper `TurnJob`, SQLite store",
    "bare Starlette endpoint (baseline)",
    "turnkeeper `GET /api/turns/{id}?after=N`",
    "turnkeeper `TurnJob`, SQLite store, `AnthropicProvider` over HTTP",
    "openai-agents `Runner.run`, `OpenAIChatCompletionsModel` over HTTP",
    "langgraph `create_react_agent`, `ChatOpenAI` over HTTP",
)


@pytest.mark.skipif(
    any(importlib.util.find_spec(p) is None for p in PEERS) and not os.environ.get("CI"),
    reason="the bench extra (the peers) is not installed; under CI it must be",
)
def test_smoke_run_writes_every_row(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    run = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,  # every workload's worker processes start; slow on a busy machine
    )
    assert run.returncode == 0, run.stderr[-3000:]
    text = out.read_text(encoding="utf-8")
    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    for headline in HEADLINES:
        assert headline in summary, headline
    for name in CONTENDERS:
        rows = [line for line in text.splitlines() if line.startswith(f"| {name} |")]
        measured = [line for line in rows if line.split("|")[2].strip()[:1].isdigit()]
        assert measured, rows
    assert "failed" not in text, run.stderr[-3000:]
    assert "turnkeeper's published usage of each turn against the fake's bills: the same" in text
    assert "| none again ÷ none (the control), per round" in text, (
        "limits are read beside a control"
    )


async def test_b_stores_limited_batch_charges_every_users_ledger_on_the_same_writes() -> None:
    """B-store's limits row measures the limits' work: the door lets every turn in, the
    job meters each one, and each user's ledger holds exactly what their turn billed, with
    no write added; the same batch without limits charges nothing."""
    # imported by name: the workloads' contenders are outside the strict type check
    b_store = importlib.import_module("bench.workloads.b_store")
    script = importlib.import_module("bench.fake").script(b_store.SPEC)
    per_turn = sum(b["usage"]["input_tokens"] + b["usage"]["output_tokens"] for b in script)
    limited = await b_store.batch(None, 5, users=True, limits=True)
    plain = await b_store.batch(None, 5, users=True)
    assert limited["ledger_rows"] == 10  # 5 users, and 5 more in the warm batch
    assert limited["ledger_tokens"] == 10 * per_turn
    assert plain["ledger_rows"] == plain["ledger_tokens"] == 0
    assert limited["writes"] == plain["writes"] == 3.0


async def test_the_counted_limits_row_queues_both_batches_first_and_runs_as_many_as_asked() -> None:
    """`bench.count` subtracts a process of one batch from one of two: both must hold the
    same turns when their first batch starts, and only the batches asked for run."""
    count = importlib.import_module("bench.count")
    assert await count.batches(True, 1, 5) == {"finished": 10, "queued": 5}
    assert await count.batches(False, 2, 5) == {"finished": 15}


# ---- G's readers -------------------------------------------------------------------


async def test_gs_readers_at_once_each_have_a_client_of_their_own() -> None:
    """As each page has its own connections: users at once never share a client's pool
    (one pool for 1,000 users fell seconds behind under load); one after another, they do."""
    from bench.live import Reader

    async with Reader("http://127.0.0.1:9") as reader:
        async with reader.user() as one, reader.user() as other:
            assert one is not other
        async with reader.user() as later:
            assert later in (one, other)


async def test_a_gs_reader_whose_request_broke_says_which_request_and_its_cause() -> None:
    """A request that breaks before any answer is named with its cause (httpx's `ReadError`
    alone says nothing), and its turn counts lost: no turn id, no text, no `turn.ended`."""
    import asyncio
    import socket
    import struct

    from bench.live import Reader
    from bench.workloads.g_live import Found

    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")  # the request's head, then a reset
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    server = await asyncio.start_server(reset, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, Reader(f"http://127.0.0.1:{port}") as reader:
        seen = await reader.turn("c0", 20, 50.0, 0.0)
    assert seen.failed is not None
    assert seen.failed.startswith("ReadError on POST /api/conversations ("), seen.failed
    assert "ConnectionResetError" in seen.failed, seen.failed
    assert Found("x", seen=[seen]).lost() == 1


# ---- the prompt-cache workload's fake API bills as the provider documents ------------

MARK = {"type": "ephemeral"}


def text_block(chars: int, label: str, mark: dict[str, str] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": label + "x" * chars}
    return block if mark is None else {**block, "cache_control": mark}


def request(*messages: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """A body: a marked 8,000-character system prompt, then one message per block list,
    user and assistant in turn."""
    roles = ("user", "assistant")
    return {
        "model": "claude-sonnet-4-5",
        "system": [text_block(8_000, "system", MARK)],
        "messages": [{"role": roles[i % 2], "content": m} for i, m in enumerate(messages)],
        **fields,
    }


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_fake_api_writes_up_to_the_last_mark_and_reads_the_longest_prefix() -> None:
    from bench.cache_api import PromptCache, tokens

    cache = PromptCache(Clock())
    system = tokens(text_block(8_000, "system"))
    q, a, r = text_block(400, "q"), text_block(400, "a"), text_block(1_600, "r")
    first = cache.bill(request([{**q, "cache_control": MARK}]))
    assert (first.read, first.written["5m"], first.input) == (0, system + tokens(q), 0)
    second = cache.bill(request([q], [a], [{**r, "cache_control": MARK}], [text_block(40, "t")]))
    assert second.read == system + tokens(q), "the first request's prefix, found looking back"
    assert second.written["5m"] == tokens(a) + tokens(r)
    assert second.input == tokens(text_block(40, "t")), "after the last mark: plain input"
    assert second.total == second.read + second.written["5m"] + second.input
    assert second.equivalents() == pytest.approx(
        0.1 * second.read + 1.25 * (tokens(a) + tokens(r)) + second.input
    )
    assert tokens({**q, "cache_control": MARK}) == tokens(q), "marks are not tokens"


def test_the_fake_apis_entries_expire_after_their_ttl_and_a_read_refreshes_them() -> None:
    from bench.cache_api import PromptCache

    clock = Clock()
    cache = PromptCache(clock)
    body = request([text_block(40, "q")])
    written = cache.bill(body).written["5m"]
    assert written > 0
    clock.now = 299.0
    assert cache.bill(body).read == written, "alive at 4 min 59 s"
    clock.now = 598.0
    assert cache.bill(body).read == written, "the read at 299 s refreshed it"
    clock.now = 899.0
    assert cache.bill(body).read == 0, "expired 5 minutes after its last use"
    hour = request([text_block(40, "q")])
    hour["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    cache, clock.now = PromptCache(clock), 0.0
    assert cache.bill(hour).written == {"5m": 0, "1h": written}
    clock.now = 3_599.0
    assert cache.bill(hour).read == written
    clock.now = 3_599.0 + 3_601.0
    assert cache.bill(hour).read == 0


def test_the_fake_api_looks_back_only_20_blocks_and_allows_4_marks() -> None:
    from bench.cache_api import PromptCache, TooManyBreakpoints

    cache = PromptCache(Clock())
    prefix = [text_block(40, f"b{i}") for i in range(3)]
    cache.bill(request(prefix))  # the system prompt's entry
    marked_early = cache.bill(request([*prefix[:-1], {**prefix[-1], "cache_control": MARK}]))
    assert marked_early.written["5m"] > 0
    later = [text_block(40, f"c{i}") for i in range(20)]
    far = cache.bill(request([*prefix, *later[:-1], {**later[-1], "cache_control": MARK}]))
    assert far.read == marked_early.read, "the entry 20 blocks back is out of sight"
    with pytest.raises(TooManyBreakpoints):
        cache.bill(
            request([{**b, "cache_control": MARK} for b in prefix] + [text_block(4, "z", MARK)])
        )


def test_the_fake_api_caches_nothing_short_and_puts_automatic_caching_on_the_last_block() -> None:
    from bench.cache_api import PromptCache

    cache = PromptCache(Clock())
    short = {"model": "m", "messages": [{"role": "user", "content": [text_block(40, "q", MARK)]}]}
    bill = cache.bill(short)
    assert (bill.written["5m"], bill.input) == (0, bill.total), "under 1,024 tokens"
    automatic = request([text_block(400, "q")], [text_block(400, "a")], cache_control=MARK)
    bill = cache.bill(automatic)
    assert bill.breakpoints == 2
    assert bill.input == 0, "written through the last block"


# ---- the compaction workload's fake API refuses as the real APIs do ------------------


def test_the_window_fake_refuses_a_long_request_on_both_wires_and_bills_only_answers() -> None:
    import httpx
    from bench.window_api import WindowApi

    from turnkeeper.turn import summary

    def ask(text: str) -> dict[str, Any]:
        return {"model": "m", "messages": [{"role": "user", "content": text}]}

    with WindowApi(1_000) as api:
        long = ask("Please read the notes for day 3." + "x" * 4_000)
        refused = httpx.post(f"{api.url}/v1/messages", json=long)
        chat = httpx.post(f"{api.url}/v1/chat/completions", json=long)
        summarised = httpx.post(f"{api.url}/v1/messages", json=ask(summary.ASK + " day 1"))
        answered = httpx.post(
            f"{api.url}/v1/messages", json=ask("Please read the notes for day 2.")
        )
    assert refused.status_code == 400
    assert chat.status_code == 400
    error = refused.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith("prompt is too long: ")
    assert error["message"].endswith(" tokens > 1000 maximum")
    assert chat.json()["error"]["code"] == "context_length_exceeded"
    assert summarised.status_code == answered.status_code == 200
    assert answered.json()["stop_reason"] == "tool_use"
    assert api.refusals == [3, 3], "a refused request is not billed"
    tokens = [b.tokens for b in api.bills]
    assert api.per_turn(3) == [0, sum(tokens), 0], "the summary's bill goes to the next turn"
