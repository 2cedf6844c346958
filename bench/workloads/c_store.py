"""C-store. History growth through the store: C's long turn run by `TurnJob`, SQLite and PostgreSQL.

The same measurement as C (`c_history.steps`: the time between model calls,
the last 10 iterations over the first 10), with contenders that run the turn
as a queued turn with a store's hooks. Each store is a scratch one, made for
this workload and removed after it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import Any

from ..contenders import label
from ..contenders.turnkeeper_store import URLS
from ..method import alternate, median, spread, workers
from ..report import Context, Headline, Section, number, table, verdict
from ..store_cost import ADMIN_URL, postgres_database
from . import c_history

TITLE = "C. History growth through the store"
BASE = "turnkeeper"
STORES = {"turnkeeper-sqlite": "SQLite", "turnkeeper-postgres": "PostgreSQL"}


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """`values` in this process's environment (the workers inherit it) for the block."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def measure(ctx: Context, n: int, rounds: int) -> tuple[Any, dict[str, str]]:
    spec = {"rounds": n, "payload": 2048, "delay": 0.0}
    names = [BASE, *STORES]
    with contextlib.ExitStack() as stack:
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="turnkeeper-bench-"))
        postgres = stack.enter_context(postgres_database(ADMIN_URL, ctx.log))
        urls = {URLS["sqlite"]: f"sqlite:///{folder}/bench.db"}
        if postgres is not None:
            urls[URLS["postgres"]] = postgres
        stack.enter_context(environment(urls))
        pool = stack.enter_context(workers(names))
        pending = {k: str(p.pending) for k, p in pool.items() if p.pending}
        ctx.log(f"{rounds} rounds of one {n}-iteration turn per store")
        steps = f"{c_history.__name__}:steps"
        return alternate(pool, steps, rounds, 600.0, ctx.log, spec=spec, turns=1), pending


def run(ctx: Context) -> Section:
    n = ctx.size(200, 20)
    rounds = ctx.size(21, 1)  # a round is a fraction of a second; its ratio moves ±30 %
    result, pending = measure(ctx, n, rounds)
    rows, heads = [], []
    for name in [BASE, *STORES]:
        if name in pending:
            rows.append([label(name), pending[name], "", "", ""])
            heads.append(Headline(f"C, {STORES[name]}", "", "≤ 1.3×", "", pending[name]))
            continue
        ratios = result.values(name, c_history.growth)
        rows.append(
            [
                label(name),
                number(median(result.values(name, c_history.first))),
                number(median(result.values(name, c_history.last))),
                f"{number(median(ratios))}×",
                spread(ratios),
            ]
        )
        if name in STORES:
            ours = median(ratios)
            heads.append(
                Headline(
                    f"C, {STORES[name]}",
                    f"µs / iteration at {n - 9}–{n} ÷ at 1–10",
                    "≤ 1.3×",
                    f"{number(ours)}×",
                    verdict(ours <= c_history.TARGET),
                )
            )
    body = DESCRIPTION.format(n=n) + f"\n{rounds} rounds\n\n"
    return Section(TITLE, body + table(c_history.HEADERS, rows) + "\n", heads)


DESCRIPTION = """\
C's turn ({n} tool round trips, 2,048-character tool results, instant model)
run as a queued turn by `TurnJob` with each store: claimed under a lease, its
usage written after every model call, a checkpoint (the iteration's two
history messages appended) and a publish (the new bubbles, the state) after
every iteration, the cancel flag read before every call, the history tail and
final state written at the end. Each turn is a new conversation in a store
that keeps every earlier turn. SQLite is a temporary file (WAL,
`synchronous=NORMAL`); PostgreSQL is a scratch database on 127.0.0.1, created
for this workload and dropped after it. The `run_turn` row is C's no-store
turn, measured in the same rounds.
"""
