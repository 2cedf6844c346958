"""Scale-out. K turns deferred on PostgreSQL + procrastinate, run by one and by two workers."""

from __future__ import annotations

import asyncio
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..method import ROOT, median, spread
from ..report import Context, Headline, Section, number, table, verdict
from ..store_cost import ADMIN_URL, postgres_database
from .b_concurrency import IDEAL, SPEC

TITLE = "Scale-out. Worker processes on PostgreSQL + procrastinate"
TARGET = 1.7
POLLS_PER_SECOND = 100.0
SLOTS = 10
"""Turns each worker runs at once in the headline rows (`turnkeeper worker --concurrency`)."""


@dataclass
class Batch:
    """What one batch of K turns through N workers measured."""

    workers: int
    turns: int
    wall: float = 0.0
    calls: int = 0
    cpu: float = 0.0
    """CPU seconds of the worker processes after start-up (imports), in all."""
    wrong: int = 0
    """Turns not finished, or claimed more than once (fence ≠ 1), or whose job did not succeed."""
    polls: list[float] = field(default_factory=list)
    failed: str | None = None

    @property
    def per_second(self) -> float:
        return self.turns / self.wall if self.wall else float("nan")


@dataclass
class WorkerProcess:
    process: subprocess.Popen[str]
    startup_cpu: float = 0.0


@contextmanager
def worker_processes(url: str, n: int, concurrency: int) -> Iterator[list[WorkerProcess]]:
    """N `bench.scale_worker` processes, each ready; stopped with SIGTERM at the end."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "bench.scale_worker", url, str(concurrency)]
    with ExitStack() as stack:
        logs = [stack.enter_context(tempfile.TemporaryFile("w+")) for _ in range(n)]
        workers = [
            WorkerProcess(
                subprocess.Popen(
                    command, stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT, env=env
                )
            )
            for log in logs
        ]
        try:
            for w in workers:
                assert w.process.stdout is not None
                hello = w.process.stdout.readline().split()
                if hello[:1] != ["ready"]:
                    raise RuntimeError(f"a worker did not start:\n{tail(logs)}")
                w.startup_cpu = float(hello[1])
            yield workers
        finally:
            for w in workers:
                if w.process.poll() is None:
                    w.process.send_signal(signal.SIGTERM)


def tail(logs: list[Any]) -> str:
    out = []
    for log in logs:
        log.seek(0)
        out += log.read().splitlines()[-10:]
    return "\n".join(out)


def stopped(workers: list[WorkerProcess]) -> tuple[int, float]:
    """Stop the workers; the model calls they made and the CPU seconds they used after start-up."""
    calls, cpu = 0, 0.0
    for w in workers:
        w.process.send_signal(signal.SIGTERM)
        out, _ = w.process.communicate(timeout=60)
        for line in out.splitlines():
            if line.startswith("calls "):
                _, made, _, used = line.split()
                calls, cpu = calls + int(made), cpu + float(used) - w.startup_cpu
    return calls, cpu


async def queued(store: Any, k: int) -> list[str]:
    async def one() -> str:
        from turnkeeper.store import new_token

        conversation_id = await store.create_conversation(new_token()[1])
        return str((await store.create_turn(conversation_id, "go")).turn_id)

    return list(await asyncio.gather(*(one() for _ in range(k))))


async def poll(store: Any, turn_ids: list[str], answered: list[float], stop: asyncio.Event) -> None:
    """What an API does for its clients meanwhile: `POLLS_PER_SECOND` reads of a turn's state."""
    while not stop.is_set():
        started = time.perf_counter()
        await store.poll(random.choice(turn_ids), 0)
        answered.append(time.perf_counter() - started)
        await asyncio.sleep(max(0.0, 1 / POLLS_PER_SECOND - (time.perf_counter() - started)))


async def finished(store: Any, turn_ids: list[str]) -> int:
    row = await store._one(
        "SELECT count(*) FROM turns WHERE done AND turn_id = ANY(%s)", [turn_ids]
    )
    return int(row[0])


async def wrong(store: Any, turn_ids: list[str]) -> int:
    """Turns not run exactly once: not finished, claimed more than once, job not succeeded."""
    row = await store._one(
        "SELECT count(*) FROM turns WHERE turn_id = ANY(%s)"
        " AND (status <> 'finished' OR fence <> 1)",
        [turn_ids],
    )
    jobs = await store._one(
        "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'"
        " AND args->>'turn_id' = ANY(%s)",
        [turn_ids],
    )
    return int(row[0]) + len(turn_ids) - int(jobs[0])


async def listening(store: Any, n: int) -> None:
    """Wait until N workers listen for new jobs (procrastinate's LISTEN/NOTIFY), with a bound."""
    sql = (
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE datname = current_database() AND query LIKE 'LISTEN%%'"
    )
    async with asyncio.timeout(60):
        # Polling: the workers start in other processes.
        while (await store._one(sql, ()))[0] < n:  # noqa: ASYNC110
            await asyncio.sleep(0.02)


async def batch(url: str, k: int, n: int, slots: int) -> Batch:
    """K turns queued, N workers of `slots` each ready, then K jobs deferred at once; timed
    until all are done."""
    from turnkeeper.service.worker import QUEUE, TASK, ProcrastinateQueue
    from turnkeeper.store import open_store

    store = await open_store(url)
    result = Batch(workers=n, turns=k)
    try:
        turn_ids = await queued(store, k)
        with worker_processes(url, n, concurrency=slots) as processes:
            await listening(store, n)
            async with ProcrastinateQueue(url) as deferred:
                stop = asyncio.Event()
                polling = asyncio.create_task(poll(store, turn_ids, result.polls, stop))
                started = time.perf_counter()
                deferrer = deferred.app.configure_task(TASK, queue=QUEUE)
                jobs: list[dict[str, Any]] = [{"turn_id": t} for t in turn_ids]
                await deferrer.batch_defer_async(*jobs)
                # Polling: the turns finish in other processes.
                while await finished(store, turn_ids) < k:  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
                result.wall = time.perf_counter() - started
                stop.set()
                await polling
            result.calls, result.cpu = await asyncio.to_thread(stopped, processes)
        result.wrong = await wrong(store, turn_ids)
    finally:
        await store.close()
    return result


def measure(ctx: Context, url: str, k: int, n: int, slots: int) -> Batch:
    try:
        return asyncio.run(batch(url, k, n, slots))
    except Exception as e:  # a failed batch is a row that says so
        ctx.log(f"  scale-out K = {k}, {n} workers of {slots} slots: {e}")
        return Batch(workers=n, turns=k, failed=f"{type(e).__name__}: {str(e).splitlines()[0]}")


HEADERS = [
    "workers",
    "rounds",
    "turns / s (median, IQR)",
    "× one worker (median of per-round ratios)",
    "wall ÷ latency-bound ideal",
    "turns not run exactly once",
    "model calls ÷ expected",
    "polls answered / s",
    "poll ms (median, max)",
]


def latency_bound(k: int, n: int, slots: int) -> float:
    """The batch's wall time if only the model's 50 ms calls took time: K turns, n × slots
    at once."""
    return math.ceil(k / (n * slots)) * IDEAL


def row(n: int, batches: list[Batch], ones: list[Batch], k: int, slots: int) -> list[str]:
    done = [b for b in batches if b.failed is None]
    if not done:
        return [str(n), str(batches[0].failed) if batches else "not run", *[""] * 7]
    ratios = [b.per_second / o.per_second for b, o in zip(batches, ones, strict=True)]
    rates = [b.per_second for b in done]
    polls = [p for b in done for p in b.polls]
    return [
        str(n),
        str(len(done)),
        f"{number(median(rates))} ({spread(rates)})",
        number(median(ratios)),
        f"{number(median([b.wall / latency_bound(k, n, slots) for b in done]))}×",
        str(sum(b.wrong for b in done)),
        number(sum(b.calls for b in done) / (len(done) * k * SPEC.calls)),
        number(median([len(b.polls) / b.wall for b in done])),
        f"{number(median(polls) * 1e3)}, {number(max(polls, default=0) * 1e3)}",
    ]


Found = dict[int, list[Batch]]
"""Batches by number of workers."""


def headlines(k: int, slots: int, found: Found, saturated: Found) -> list[Headline]:
    pairs = [(o, t) for o, t in zip(found[1], found[2], strict=True) if not (o.failed or t.failed)]
    ratio = median([t.per_second / o.per_second for o, t in pairs])
    batches = [b for runs in (found, saturated) for n in runs for b in runs[n]]
    wrong = sum(b.wrong for b in batches)
    calls_ok = all(b.calls == k * SPEC.calls for b in batches if not b.failed)
    where = f"Scale-out, K = {k:,}"
    return [
        Headline(
            f"{where}, {slots} slots per worker",
            "turns/s, two workers ÷ one",
            f"≥ {TARGET}×",
            f"{number(ratio)}×",
            verdict(ratio >= TARGET),
        ),
        Headline(
            where,
            "turns not run exactly once",
            "0",
            str(wrong),
            verdict(wrong == 0 and calls_ok and bool(pairs)),
        ),
    ]


def collect(ctx: Context, url: str, k: int, slots: int, rounds: int) -> Found:
    """Rounds of one and two workers of `slots` each, alternating which goes first."""
    found: Found = {1: [], 2: []}
    for r in range(rounds):
        for n in (1, 2) if r % 2 == 0 else (2, 1):
            found[n].append(measure(ctx, url, k, n, slots))
        ctx.log(f"{TITLE}: {slots} slots per worker, round {r + 1}/{rounds}")
    return found


def run(ctx: Context) -> Section:
    k = 5 if ctx.smoke else 200
    slots = 2 if ctx.smoke else SLOTS
    rounds = ctx.size(3, 1)  # a round starts three worker processes and runs 2 × K turns
    with postgres_database(ADMIN_URL, ctx.log) as url:
        if url is None:
            pending = "pending: no PostgreSQL server answered"
            return Section(
                TITLE, DESCRIPTION, [Headline(f"Scale-out, K = {k:,}", "", "", "", pending)]
            )
        asyncio.run(migrated(url))
        found = collect(ctx, url, k, slots, rounds)
        saturated = collect(ctx, url, k, k, rounds)
    body = DESCRIPTION
    for runs, n in ((found, slots), (saturated, k)):
        rows = [row(w, runs[w], runs[1], k, n) for w in (1, 2)]
        body += f"\n**K = {k}** turns, each worker with `--concurrency {n}`\n\n"
        body += table(HEADERS, rows) + "\n"
    return Section(TITLE, body, headlines(k, slots, found, saturated))


async def migrated(url: str) -> None:
    from turnkeeper.store import open_store

    store = await open_store(url)
    try:
        await store.migrate()
    finally:
        await store.close()


DESCRIPTION = """\
K turns are queued in a scratch PostgreSQL database; N worker processes start
(`python -m bench.scale_worker`: what `turnkeeper worker` runs, `server.work`
with `serve`'s GC policy, on B's fake model: 6 calls of 50 ms a turn, the model
in process rather than behind HTTP) and say they are ready; then all K turns
are deferred at once as procrastinate jobs and the clock runs until every turn
is done. Meanwhile this process reads a random turn's state
100 times a second, as the API answers a poll (`poll`). After the
batch the workers are stopped and the run is checked: every turn finished,
claimed once (fence 1), its job succeeded, and the model calls add up to
K × 6.

Each worker runs at most `--concurrency` turns at once (its slots). The
headline runs workers of 10 slots each: one worker has 10 turns in flight and
the queue holds the rest, a second worker takes them too (20 in flight), which
is what adding a worker is for. **This machine has two cores, and the workers
share them with PostgreSQL and with this process**, so the second table gives
each worker as many slots as there are turns: one worker alone then takes
the whole batch and is bound by the CPU, and on these 2 cores a second worker
has little left to add. The latency-bound ideal is 0.30 s per round of slots
(K ÷ (workers × slots) rounds).
"""
