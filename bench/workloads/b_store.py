"""B-store. B's batch through the embedded queue (`LocalQueue` + `TurnJob`) and the SQLite store."""

from __future__ import annotations

import asyncio
import gc
import tempfile
import time
from typing import Any

from turnkeeper import Budget
from turnkeeper.service import gc_policy
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
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


async def batch(worker: Worker, k: int, policy: bool = False) -> dict[str, Any]:
    """K turns at once through the queue; wall, CPU and commits, after a warm batch.

    With `policy`, the process applies `serve`'s GC policy after the warm batch.
    """
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
            if policy:
                gc_policy.apply()
            commits, writes, reads = (
                store.commits.commits,
                store.commits.writes,
                store.commits.reads,
            )
            wall, cpu = time.perf_counter(), time.process_time()
            await run_batch(queue, turn_ids)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            commits, writes = store.commits.commits - commits, store.commits.writes - writes
            reads = store.commits.reads - reads
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
        "reads": reads / iterations,
    }


def measure(ctx: Context, k: int, policy: bool) -> dict[str, Any]:
    try:
        return fresh("turnkeeper", f"{__name__}:batch", 300.0, k=k, policy=policy)
    except WorkerFailed as e:
        ctx.log(f"  B-store K = {k}: {e}")
        return {"failed": str(e).splitlines()[0]}


HEADERS = [
    "K",
    "GC",
    "rounds",
    "iterations / s (median, IQR)",
    "ideal (latency-bound)",
    "wall ÷ ideal",
    "CPU µs / iteration",
    "writes / iteration",
    "commits / iteration",
    "reads / iteration",
]


def row(k: int, policy: bool, answers: list[dict[str, Any]]) -> list[str]:
    done = [a for a in answers if "wall" in a]
    gc_label = "`serve`'s policy" if policy else "default"
    if not done:
        return [f"{k:,}", gc_label, str(answers[0].get("failed") if answers else "not run")]
    rates = [a["per_second"] for a in done]
    return [
        f"{k:,}",
        gc_label,
        str(len(done)),
        f"{number(median(rates))} ({spread(rates)})",
        number(k * SPEC.calls / IDEAL),
        f"{number(median([a['wall'] / IDEAL for a in done]))}×",
        number(median([a["cpu_us"] for a in done])),
        number(median([a["writes"] for a in done])),
        number(median([a["commits"] for a in done])),
        number(median([a["reads"] for a in done])),
    ]


def run(ctx: Context) -> Section:
    big = 5 if ctx.smoke else 1000
    cases = [(k, False) for k in ((5,) if ctx.smoke else (100, 1000))] + [(big, True)]
    rounds = ctx.size(5, 1)
    found: dict[tuple[int, bool], list[dict[str, Any]]] = {c: [] for c in cases}
    for r in range(rounds):
        for k, policy in cases[r % len(cases) :] + cases[: r % len(cases)]:
            found[k, policy].append(measure(ctx, k, policy))
        ctx.log(f"{TITLE}: round {r + 1}/{rounds}")
    rows = [row(k, policy, found[k, policy]) for k, policy in cases]
    heads = headlines(big, found[big, False], found[big, True])
    return Section(TITLE, DESCRIPTION + "\n" + table(HEADERS, rows) + "\n", heads)


def headlines(k: int, plain: list[dict[str, Any]], policy: list[dict[str, Any]]) -> list[Headline]:
    """Iterations/s as the library runs (default GC), and as `serve` runs (its GC policy)."""
    rate = median([a["per_second"] for a in plain if "per_second" in a])
    served = median([a["per_second"] for a in policy if "per_second" in a])
    where = f"B-store, K = {k:,}"
    return [
        Headline(
            where,
            "iterations per second, one process",
            "≥ 5,000",
            number(rate),
            verdict(rate >= TARGET),
        ),
        Headline(
            where + ", `serve`'s GC policy",
            "iterations per second, one process",
            "≥ 5,000",
            number(served),
            verdict(served >= TARGET),
        ),
    ]


DESCRIPTION = """\
B's turns (6 model calls of 50 ms each, 5 tool round trips) queued in a
SQLite store (a temporary file, WAL, `synchronous=NORMAL`) and run by the
embedded queue: `LocalQueue(TurnJob(...), concurrency=K)`, each turn claimed
under a lease (one renewer per job), its usage recorded after every model
call that asks for tools (before they run), one write per iteration (history,
published state, usage and model calls together, the turn's cancel flag read
back with it), its final state written with the history tail; the store is
asked whether the turn was cancelled only before its first call. K turns are
queued first, then enqueued at once; the clock runs until the queue is empty.
One fresh worker process per measurement, after a warm batch of min(K, 50)
turns. "Writes" are store calls that write;
"commits" are the SQLite transactions they took (the store commits the
writes that arrive while a commit runs together, see
`src/turnkeeper/store/commits.py`); "reads" are store calls that only
read. The ideal is K × 6 iterations in 0.30 s.
The rows with `serve`'s GC policy apply `turnkeeper.gc_policy` (what `serve`
and `worker` apply at start) after the warm batch: start-up's objects frozen
out of the collector's reach, young collections every 50,000 allocations.
"""
