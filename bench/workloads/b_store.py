"""B-store. B's batch through the embedded queue (`LocalQueue` + `TurnJob`) and the SQLite store."""

from __future__ import annotations

import asyncio
import gc
import json
import sqlite3
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from turnkeeper import Budget, Limits
from turnkeeper.service import gc_policy
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
from turnkeeper.store import new_token
from turnkeeper.store.sqlite import SqliteStore
from turnkeeper.usage import Usage, billed

from ..contenders.turnkeeper_loop import FakeProvider, as_provider, quiet, toolset
from ..method import WorkerFailed, fresh, interleaved, median, spread
from ..report import Context, Headline, Section, number, table, verdict
from ..worker import Worker
from .b_concurrency import IDEAL, SPEC

TITLE = "B-store. Concurrent turns through the queue and SQLite"
TARGET = 5000.0


LIMITS = Limits(turns_per_minute=1_000_000, tokens_per_day=10**12, cost_per_day=1_000_000.0)
"""Every limit set, none within reach: each turn is checked at the door and metered, its
writes charge its user's ledger, and no turn is refused or cut short."""


async def queued(
    store: SqliteStore, k: int, users: str | None = None, limits: Limits | None = None
) -> list[str]:
    """K queued turns, each in a conversation of its own; with `users`, each asked by a user
    of its own (`{users}-{i}`), and with `limits` let in by the door (`create_turn`'s check)."""

    async def one(i: int) -> str:
        conversation_id = await store.create_conversation(new_token()[1])
        user = None if users is None else f"{users}-{i}"
        turn = await store.create_turn(conversation_id, "go", user=user, limits=limits)
        return turn.turn_id

    return list(await asyncio.gather(*(one(i) for i in range(k))))


def ledger(path: str) -> tuple[int, int, int]:
    """The ledger's rows and tokens, and the tokens the turns' own usage says they billed."""
    with sqlite3.connect(path) as db:
        found = db.execute("SELECT count(*), coalesce(sum(tokens), 0) FROM usage_days")
        rows, tokens = found.fetchone()
        usages = db.execute("SELECT usage FROM turns").fetchall()
    return rows, tokens, sum(billed(Usage.from_dict(json.loads(u))) for (u,) in usages)


async def run_batch(queue: LocalQueue, turn_ids: list[str]) -> None:
    for turn_id in turn_ids:
        await queue.enqueue(turn_id)
    await queue.join()


@dataclass
class Embedded:
    """B's turns on the embedded default: a fresh SQLite store, and the `LocalQueue` of K
    slots whose `TurnJob` runs them (with `limits`, the assistant's)."""

    store: SqliteStore
    queue: LocalQueue
    limits: Limits | None
    path: str
    """The database file."""

    async def queued(self, k: int, users: str | None) -> list[str]:
        return await queued(self.store, k, users, self.limits)

    async def run(self, turn_ids: list[str]) -> None:
        await run_batch(self.queue, turn_ids)


@asynccontextmanager
async def embedded(k: int, users: bool, limits: bool) -> AsyncIterator[Embedded]:
    """`Embedded` in a temporary folder, after a warm batch (min(K, 50) turns, with users
    of their own when `users`); with `limits` (which needs `users`) the assistant sets
    `LIMITS`. The store is closed on leaving, the folder kept until then."""
    assert users or not limits, "limits count per user: give every turn one"
    budget = Budget(max_iterations=SPEC.calls, deadline=3600.0, call_timeout=600.0)
    setting = LIMITS if limits else None
    with tempfile.TemporaryDirectory(prefix="turnkeeper-bench-") as folder:
        path = f"{folder}/bench.db"
        store = SqliteStore(path)
        try:
            await store.migrate()
            provider = as_provider(FakeProvider(SPEC))
            job = TurnJob(store, provider, toolset(SPEC), budget, reporter=quiet, limits=setting)
            bench = Embedded(store, LocalQueue(job, concurrency=k), setting, path)
            await bench.run(await bench.queued(min(k, 50), "warm" if users else None))
            yield bench
        finally:
            await store.close()


async def batch(
    worker: Worker | None,
    k: int,
    policy: bool = False,
    users: bool = False,
    limits: bool = False,
) -> dict[str, Any]:
    """K turns at once through the queue; wall, CPU and commits, after a warm batch.

    With `policy`, the process applies `serve`'s GC policy after the warm batch. With
    `users`, every turn has a user of its own; with `limits` (which needs `users`) the
    assistant sets `LIMITS`: the door checks each turn in `create_turn`'s transaction, the
    job meters every turn, and the ledger must come out holding every user's tokens.
    """
    async with embedded(k, users, limits) as bench:
        store = bench.store
        door = time.process_time()
        turn_ids = await bench.queued(k, "user" if users else None)
        door = time.process_time() - door
        gc.collect()
        if policy:
            gc_policy.apply()
        commits, writes, reads = (
            store.commits.commits,
            store.commits.writes,
            store.commits.reads,
        )
        wall, cpu = time.perf_counter(), time.process_time()
        await bench.run(turn_ids)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        commits, writes = store.commits.commits - commits, store.commits.writes - writes
        reads = store.commits.reads - reads
        counts = await store.counts()
        rows, tokens, turns_billed = ledger(bench.path)
    iterations, turns = k * SPEC.calls, k + min(k, 50)
    assert counts == {"finished": turns}, counts
    if limits:  # every user's ledger written, with exactly what their turns billed
        assert rows == turns, (rows, turns)
        assert tokens == turns_billed > 0, (tokens, turns_billed)
    else:
        assert rows == 0, rows
    return {
        "wall": wall,
        "per_second": iterations / wall,
        "cpu_us": cpu / iterations * 1e6,
        "commits": commits / iterations,
        "writes": writes / iterations,
        "reads": reads / iterations,
        "queue_cpu_us": door / k * 1e6,
        "ledger_rows": rows,
        "ledger_tokens": tokens,
    }


def measure(
    ctx: Context, k: int, policy: bool, users: bool = False, limits: bool = False
) -> dict[str, Any]:
    try:
        args = {"k": k, "policy": policy, "users": users, "limits": limits}
        return fresh("turnkeeper", f"{__name__}:batch", 300.0, **args)
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
    sides = with_limits(ctx, big, ctx.size(21, 1))
    heads += limits_headlines(big, sides)
    body = DESCRIPTION + "\n" + table(HEADERS, rows) + "\n\n" + LIMITS_DESCRIPTION
    body += "\n" + table(LIMITS_HEADERS, limits_rows(sides)) + "\n"
    return Section(TITLE, body, heads)


# ---- what setting limits costs: the same batch, every turn with a user, limits off and on


def with_limits(ctx: Context, k: int, rounds: int) -> dict[str, list[dict[str, Any]]]:
    """`rounds` rounds of one fresh batch of K turns with users and no limits ("none"), one
    with `LIMITS` ("limits"), one more with none ("again", the control: what the same
    setting measures against itself), and the first two again under `serve`'s GC policy
    ("served none", "served limits"), the order rotating from round to round."""
    sides: dict[str, Callable[[], dict[str, Any]]] = {
        "none": lambda: measure(ctx, k, False, users=True),
        "limits": lambda: measure(ctx, k, False, users=True, limits=True),
        "again": lambda: measure(ctx, k, False, users=True),
        "served none": lambda: measure(ctx, k, True, users=True),
        "served limits": lambda: measure(ctx, k, True, users=True, limits=True),
    }
    return interleaved(rounds, sides, lambda line: ctx.log(f"{TITLE}, limits set and none:{line}"))


RATIOS = (
    ("limits", "none", "set ÷ none"),
    ("served limits", "served none", "set ÷ none, `serve`'s GC policy"),
    ("again", "none", "none again ÷ none (the control)"),
)
"""The limits row's ratios: side, the side it is read against, and its label."""


def paired(
    sides: dict[str, list[dict[str, Any]]], key: str, side: str = "limits", base: str = "none"
) -> list[float]:
    """`side` ÷ `base`, round by round (rounds where either failed left out)."""
    pairs = zip(sides[side], sides[base], strict=True)
    return [on[key] / off[key] for on, off in pairs if key in on and key in off]


LIMITS_HEADERS = [
    "limits",
    "rounds",
    "iterations / s (median, IQR)",
    "CPU µs / iteration (median, IQR)",
    "writes / iteration",
    "commits / iteration",
    "CPU µs / turn queued",
    "ledger rows, tokens",
]


def limits_rows(sides: dict[str, list[dict[str, Any]]]) -> list[list[str]]:
    rows = []
    for name, label in (
        ("none", "none"),
        ("limits", "set (`LIMITS`)"),
        ("again", "none, again"),
        ("served none", "none, `serve`'s GC policy"),
        ("served limits", "set, `serve`'s GC policy"),
    ):
        done = [a for a in sides[name] if "wall" in a]
        if not done:
            rows.append([label, str(sides[name][0].get("failed") if sides[name] else "not run")])
            continue
        rates, cpu = [a["per_second"] for a in done], [a["cpu_us"] for a in done]
        rows.append(
            [
                label,
                str(len(done)),
                f"{number(median(rates))} ({spread(rates)})",
                f"{number(median(cpu))} ({spread(cpu)})",
                number(median([a["writes"] for a in done])),
                number(median([a["commits"] for a in done])),
                number(median([a["queue_cpu_us"] for a in done])),
                f"{done[-1]['ledger_rows']:,}, {done[-1]['ledger_tokens']:,}",
            ]
        )
    for side, base, label in RATIOS:
        keys = ("per_second", "cpu_us", "queue_cpu_us")
        ratios = {key: paired(sides, key, side, base) for key in keys}
        rows.append(
            [
                f"{label}, per round (median, IQR)",
                str(len(ratios["cpu_us"])),
                f"{number(median(ratios['per_second']))}× ({spread(ratios['per_second'])})",
                f"{number(median(ratios['cpu_us']))}× ({spread(ratios['cpu_us'])})",
                "",
                "",
                f"{number(median(ratios['queue_cpu_us']))}× ({spread(ratios['queue_cpu_us'])})",
                "",
            ]
        )
    return rows


def limits_headlines(k: int, sides: dict[str, list[dict[str, Any]]]) -> list[Headline]:
    """CPU per iteration with limits set ÷ with none, the median of the per-round ratios,
    as the library runs (default GC) and as `serve` runs (its GC policy), beside the
    control's (none ÷ none): how far the same setting reads from itself."""
    control = paired(sides, "cpu_us", "again")
    said = f"the control, none ÷ none: {number(median(control))}×, IQR {spread(control)}"
    heads = []
    for side, base, where in (
        ("limits", "none", ""),
        ("served limits", "served none", ", `serve`'s GC policy"),
    ):
        ratios = paired(sides, "cpu_us", side, base)
        ratio = median(ratios)
        heads.append(
            Headline(
                f"B-store, K = {k:,}, limits set ÷ none{where}",
                "CPU µs per iteration",
                f"≤ {LIMITS_TARGET}×",
                f"{number(ratio)}× (IQR {spread(ratios)}; {said})",
                verdict(ratio <= LIMITS_TARGET),
            )
        )
    return heads


LIMITS_TARGET = 1.05


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

LIMITS_DESCRIPTION = """\
**Limits set and none** (issue 31: "no slower with limits set"). The same
batch at the largest K with every turn asked by a user of its own (K users,
and 50 more for the warm batch), once with the assistant's limits unset,
once with `LIMITS` (`Limits(turns_per_minute=1,000,000,
tokens_per_day=10¹², cost_per_day=$1,000,000)`: every check made, none
within reach), once more unset (the control), and unset and set again under
`serve`'s GC policy, each in a fresh worker process, the order rotating from
round to round; each ratio is the median of the per-round ratios against the
unset batch of the same collector. The control's ratio (none
÷ none) is how far this machine reads one setting from itself: a "set ÷
none" inside its spread could not be told from nothing. With limits
the door's check (the user's day read, the user's turns of the last minute
counted) runs in each `create_turn`'s transaction, timed apart as "CPU µs /
turn queued" (outside the batch's clock), and the job meters every turn:
each write carries what the calls billed since the last, which the database
thread adds to the days it keeps and answers with the day's totals, and
writes to `usage_days` just before the transaction commits, one upsert per
user touched (`store/days.py`); the check before every model call answers
from the totals the last write read (docs/design.md §13). Each limited batch
asserts that the ledger holds one row per user with exactly the tokens the
turns' usage says they billed (none without limits).
"""
