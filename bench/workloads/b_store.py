"""B-store. B's batch through the embedded queue (`LocalQueue` + `TurnJob`) and the SQLite store."""

from __future__ import annotations

import asyncio
import gc
import tempfile
import time
from typing import Any

from turnkeeper import Budget
from turnkeeper.job import TurnJob
from turnkeeper.queue import LocalQueue
from turnkeeper.store import new_token
from turnkeeper.store.sqlite import SqliteStore

from .. import fake
from ..contenders.turnkeeper_loop import FakeProvider, quiet, toolset
from ..method import WorkerFailed, fresh, median, spread
from ..report import Context, Headline, Section, number, table, verdict
from ..worker import Worker
from .b_concurrency import IDEAL, SPEC

TITLE = "B-store. Concurrent turns through the queue and SQLite"
TARGET = 5000.0


async def queued(store: SqliteStore, k: int) -> list[str]:
    """K queued turns, each in a conversation of its own."""

    async def one() -> str:
        conversation_id = await store.create_conversation(new_token()[1])
        return (await store.create_turn(conversation_id, "go")).turn_id

    return list(await asyncio.gather(*(one() for _ in range(k))))


async def run_batch(queue: LocalQueue, turn_ids: list[str]) -> None:
    for turn_id in turn_ids:
        await queue.enqueue(turn_id)
    await queue.join()


async def batch(worker: Worker, k: int) -> dict[str, Any]:
    """K turns at once through the queue; wall, CPU and commits, after a warm batch."""
    spec = fake.Spec(**{"rounds": SPEC.rounds, "payload": SPEC.payload, "delay": SPEC.delay})
    budget = Budget(max_iterations=spec.calls, deadline=3600.0, call_timeout=600.0)
    with tempfile.TemporaryDirectory(prefix="turnkeeper-bench-") as folder:
        store = SqliteStore(f"{folder}/bench.db")
        await store.migrate()
        job = TurnJob(store, FakeProvider(spec), toolset(spec), budget, reporter=quiet)
        queue = LocalQueue(job, concurrency=k)
        try:
            await run_batch(queue, await queued(store, min(k, 50)))
            turn_ids = await queued(store, k)
            gc.collect()
            commits, writes = store.commits.commits, store.commits.writes
            wall, cpu = time.perf_counter(), time.process_time()
            await run_batch(queue, turn_ids)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            commits, writes = store.commits.commits - commits, store.commits.writes - writes
            counts = await store.counts()
        finally:
            await store.close()
    iterations = k * spec.calls
    assert counts == {"finished": k + min(k, 50)}, counts
    return {
        "wall": wall,
        "per_second": iterations / wall,
        "cpu_us": cpu / iterations * 1e6,
        "commits": commits / iterations,
        "writes": writes / iterations,
    }


def measure(ctx: Context, k: int) -> dict[str, Any]:
    try:
        return fresh("turnkeeper", f"{__name__}:batch", 300.0, k=k)
    except WorkerFailed as e:
        ctx.log(f"  B-store K = {k}: {e}")
        return {"failed": str(e).splitlines()[0]}


HEADERS = [
    "K",
    "rounds",
    "iterations / s (median, IQR)",
    "ideal (latency-bound)",
    "wall ÷ ideal",
    "CPU µs / iteration",
    "writes / iteration",
    "commits / iteration",
]


def row(k: int, answers: list[dict[str, Any]]) -> list[str]:
    done = [a for a in answers if "wall" in a]
    if not done:
        return [str(k), str(answers[0].get("failed") if answers else "not run"), *[""] * 6]
    rates = [a["per_second"] for a in done]
    return [
        f"{k:,}",
        str(len(done)),
        f"{number(median(rates))} ({spread(rates)})",
        number(k * SPEC.calls / IDEAL),
        f"{number(median([a['wall'] / IDEAL for a in done]))}×",
        number(median([a["cpu_us"] for a in done])),
        number(median([a["writes"] for a in done])),
        number(median([a["commits"] for a in done])),
    ]


def run(ctx: Context) -> Section:
    sizes = (5,) if ctx.smoke else (100, 1000)
    rounds = ctx.size(5, 1)
    found: dict[int, list[dict[str, Any]]] = {k: [] for k in sizes}
    for r in range(rounds):
        for k in sizes:
            found[k].append(measure(ctx, k))
        ctx.log(f"{TITLE}: round {r + 1}/{rounds}")
    rows = [row(k, found[k]) for k in sizes]
    big = sizes[-1]
    rate = median([a["per_second"] for a in found[big] if "per_second" in a])
    head = Headline(
        f"B-store, K = {big:,}",
        "iterations per second, one process",
        "≥ 5,000",
        number(rate),
        verdict(rate >= TARGET),
    )
    return Section(TITLE, DESCRIPTION + "\n" + table(HEADERS, rows) + "\n", [head])


DESCRIPTION = """\
B's turns (6 model calls of 50 ms each, 5 tool round trips) queued in a
SQLite store (a temporary file, WAL, `synchronous=NORMAL`) and run by the
embedded queue: `LocalQueue(TurnJob(...), concurrency=K)`, each turn claimed
under a lease, its usage recorded after every model call, a checkpoint and a
publish after every iteration, its final state written with the history tail;
the loop also asks the store before every call whether the turn was
cancelled. K turns are queued first, then enqueued at once; the clock runs
until the queue is empty. One fresh worker process per measurement, after a
warm batch of min(K, 50) turns. "Writes" are store calls that write;
"commits" are the SQLite transactions they took (the store commits the
writes that arrive while a commit runs together, see
`src/turnkeeper/store/commits.py`). The ideal is K × 6 iterations in 0.30 s.
"""
