"""What the store costs per iteration, late in a long turn against early in it.

    python bench/store_cost.py [--iterations 200] [--runs 3]

One iteration writes what the loop writes: usage after the model call, a
checkpoint that appends the iteration's two history messages, and the publish
of the state (one more bubble each time, the worst case). Writes are
proportional to what changed, so the cost at iteration 200 should stay within
1.5x of the cost at iteration 10. Both stores: SQLite always; PostgreSQL when
the server at TURNKEEPER_BENCH_POSTGRES (default postgresql://postgres@127.0.0.1:5432/postgres)
answers. Prints the medians and their ratio; not a test, no assertion.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from turnkeeper import state as published
from turnkeeper.store import Store, new_token, open_store
from turnkeeper.store.records import Checkpoint
from turnkeeper.usage import Usage

WINDOW = 5
TARGET = 1.5


def iteration_messages(n: int) -> list[dict[str, Any]]:
    use_id = f"toolu_{n:05d}"
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"step {n}: let me look that up " + "x" * 200},
                {"type": "tool_use", "id": use_id, "name": "lookup", "input": {"q": f"item {n}"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use_id, "content": "y" * 400}],
        },
    ]


async def one_turn(store: Store, iterations: int) -> list[float]:
    """Seconds each iteration's writes took, in order."""
    conversation_id = await store.create_conversation(new_token()[1])
    turn = await store.create_turn(conversation_id, "a long task")
    fence = await store.claim(turn.turn_id, 300, "anthropic")
    assert fence is not None
    state = published.queued(turn.turn_id, conversation_id, "a long task").running()
    usage = Usage()
    costs = []
    for n in range(1, iterations + WINDOW + 1):
        appended = iteration_messages(n)
        if n == 1:
            appended.insert(0, {"role": "user", "content": "a long task"})
        started = time.perf_counter()
        usage.add(Usage(iterations=1, input_tokens=1000 + 300 * n, output_tokens=50))
        await store.record_usage(turn.turn_id, fence, usage)
        state = state.iterated(activity=None, text=f"step {n}: let me look that up", usage=usage)
        write = Checkpoint(turn.turn_id, n, appended, state, usage.copy())
        await store.checkpoint(turn.turn_id, fence, write)
        costs.append(time.perf_counter() - started)
    return costs


def around(costs: list[float], iteration: int) -> list[float]:
    return costs[iteration - WINDOW : iteration + WINDOW]


async def measure(name: str, url: str, iterations: int, runs: int) -> float:
    store = await open_store(url)
    early: list[float] = []
    late: list[float] = []
    try:
        await one_turn(store, 20)  # warm up
        for _ in range(runs):
            costs = await one_turn(store, iterations)
            early += around(costs, 10)
            late += around(costs, iterations)
    finally:
        await store.close()
    at_10, at_n = statistics.median(early), statistics.median(late)
    ratio = at_n / at_10
    verdict = "ok" if ratio <= TARGET else f"OVER the {TARGET}x target"
    print(
        f"{name:<10} iteration 10: {at_10 * 1e3:7.3f} ms   iteration {iterations}: "
        f"{at_n * 1e3:7.3f} ms   ratio {ratio:4.2f}x  ({verdict})"
    )
    return ratio


ADMIN_URL = os.environ.get(
    "TURNKEEPER_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)


@contextmanager
def postgres_database(admin_url: str, log: Callable[[str], None] = print) -> Iterator[str | None]:
    """A throwaway database on the server at `admin_url`, or None when it cannot be reached."""
    try:
        import psycopg
    except ImportError:
        log("postgresql skipped: psycopg is not installed")
        yield None
        return
    name = f"turnkeeper_bench_{secrets.token_hex(4)}"
    try:
        admin = psycopg.connect(admin_url, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as e:
        log(f"postgresql skipped: {str(e).strip().splitlines()[0]}")
        yield None
        return
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlsplit(admin_url)._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def main(iterations: int, runs: int) -> int:
    print(f"store cost per iteration (median of {2 * WINDOW} iterations x {runs} runs)")
    ratios = []
    with tempfile.TemporaryDirectory(prefix="turnkeeper-bench-") as folder:
        ratios.append(await measure("sqlite", f"sqlite:///{folder}/bench.db", iterations, runs))
    with postgres_database(ADMIN_URL) as url:
        if url is not None:
            ratios.append(await measure("postgresql", url, iterations, runs))
    return 0 if all(r <= TARGET for r in ratios) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.iterations, args.runs)))
