"""G: the live stream. From the model's first text byte to a page's first `text.delta`."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..live import Reader, Seen, Service, rss, sampled, serving, stamps
from ..live_fake import answer
from ..report import Context, Headline, Section, number, table, verdict
from ..store_cost import ADMIN_URL, postgres_database

TITLE = "G. The live stream: `GET /api/turns/{id}/events`"
EMBEDDED, ACROSS, WRITES = 20.0, 50.0, 25
"""Targets: first-delta ms on SQLite in `serve`, across a worker on PostgreSQL; writes."""
LATENCY = (20, 5.0, 150.0)
"""A latency turn's answer: pieces, ms between them, ms before the first (all subscribed)."""
LONG = (1000, 1.0, 150.0)
"""The long answer: 1,000 pieces over ~1 s."""


@dataclass
class Found:
    """What one setting measured."""

    name: str
    seen: list[Seen] = field(default_factory=list)
    sent: dict[str, list[float]] = field(default_factory=dict)
    writes: list[int] = field(default_factory=list)
    """Per long turn: text.delta events (SQLite) or transactions that wrote events (PostgreSQL)."""
    peak: int = 0
    idle: int = 0
    failed: str | None = None

    def firsts(self, pieces: int | None = None) -> list[float]:
        """ms from the fake's first text byte to the reader's first text.delta, per turn
        (of answers of `pieces` pieces, if given)."""
        return [
            (s.deltas[0][0] - self.sent[s.key][0]) * 1e3
            for s in self.seen
            if s.deltas and self.sent.get(s.key) and pieces in (None, s.pieces)
        ]

    def lags(self) -> list[float]:
        return [lag * 1e3 for s in self.seen for lag in s.lags(self.sent.get(s.key, []))]

    def lost(self) -> int:
        """Turns whose reader's joined deltas differ from the answer, or that never ended."""
        return sum(1 for s in self.seen if s.text != answer(s.pieces) or not s.ended)

    def resumed(self) -> int:
        """Readers whose stream ended or broke before `turn.ended`, read again by cursor."""
        return sum(1 for s in self.seen if s.resumed)

    def said(self) -> list[str]:
        """Why each reader that was lost, or read again by cursor, was (for the log)."""
        return [
            f"{s.key} {s.turn_id}: {s.failed or '; '.join(s.resumed)}"
            for s in self.seen
            if s.failed or s.resumed
        ]

    def late(self) -> int:
        """Readers subscribed only after their turn's first text byte (their lag is longer)."""
        return sum(1 for s in self.seen if self.sent.get(s.key, [0.0])[0] < s.subscribed)


def quantile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def sequential(service: Service, turns: int, shape: tuple[int, float, float]) -> list[Seen]:
    async with Reader(service.base) as reader:
        return [await reader.turn(f"s{i}-{id(reader)}", *shape) for i in range(turns)]


async def long_writes(service: Service, url: str, turns: int) -> tuple[list[Seen], list[int]]:
    """`turns` long answers one after another, and the writes each made."""
    seen = await sequential(service, turns, LONG)
    if not url.startswith("postgresql"):
        return seen, [len(s.deltas) for s in seen]
    return seen, [await event_transactions(url, s) for s in seen]


async def event_transactions(url: str, seen: Seen) -> int:
    """Transactions that wrote the turn's events (its rows' distinct `xmin`): one per write."""
    import psycopg

    sql = "SELECT count(DISTINCT xmin::text) FROM turn_events WHERE turn_id = %s"
    async with await psycopg.AsyncConnection.connect(url) as conn:
        row = await (await conn.execute(sql, [seen.turn_id])).fetchone()
    return int(row[0]) if row else 0


async def concurrent(service: Service, n: int, found: Found) -> None:
    """N turns at once, one reader each; the serve process's resident set sampled meanwhile."""
    found.idle = rss(service.pid)
    stop = asyncio.Event()
    peak = asyncio.create_task(sampled(service.pid, stop))
    shape = (20, 50.0, 2000.0 + 3.0 * n)  # ~1 s of answer once every reader is subscribed
    async with Reader(service.base) as reader:
        found.seen = list(await asyncio.gather(*(reader.turn(f"c{i}", *shape) for i in range(n))))
    stop.set()
    found.peak = await peak


def measured(ctx: Context, name: str, url: str, *, worker: bool, n: int) -> tuple[Found, Found]:
    """One setting: latency turns one after another and long answers (the first Found),
    then N turns at once (the second; none if N is 0)."""
    found, many = Found(name), Found(name)
    try:
        with serving(url, worker=worker, concurrency=max(n, 4)) as service:
            found.seen = asyncio.run(sequential(service, ctx.size(60, 3), LATENCY))
            ctx.log(f"  {name}: {len(found.seen)} latency turns")
            long, found.writes = asyncio.run(long_writes(service, url, ctx.size(5, 1)))
            found.seen += long
            if n:
                asyncio.run(concurrent(service, n, many))
                ctx.log(f"  {name}: {n} turns at once")
                for why in many.said()[:10]:
                    ctx.log(f"    {why}")
            found.sent = many.sent = stamps(service.fake)
    except Exception as e:  # a setting that fails is a row that says so
        ctx.log(f"  {name}: {type(e).__name__}: {e}")
        found.failed = many.failed = f"{type(e).__name__}: {str(e).splitlines()[0:1]}"
    return found, many


def ms(values: Sequence[float]) -> str:
    return f"{number(statistics.median(values))}" if values else "–"


def latency_row(found: Found) -> list[str]:
    if found.failed:
        return [found.name, found.failed, "", "", "", "", ""]
    firsts = found.firsts(LATENCY[0])
    return [
        found.name,
        str(len(firsts)),
        ms(firsts),
        number(quantile(firsts, 0.9)),
        ms(found.lags()),
        ", ".join(str(w) for w in found.writes) or "–",
        str(found.lost()),
    ]


def many_row(found: Found, n: int) -> list[str]:
    if found.failed or not found.seen:
        return [str(n), found.failed or "not run", "", "", "", "", ""]
    firsts, lags = found.firsts(), found.lags()
    per_stream = (found.peak - found.idle) / n
    again = f" ({found.resumed()} read again by cursor)" if found.resumed() else ""
    return [
        str(n),
        f"{ms(firsts)}, {number(quantile(firsts, 0.99))}",
        f"{ms(lags)}, {number(quantile(lags, 0.99))}",
        f"{number(per_stream / 1024)} KiB",
        f"{number(found.idle / 2**20)} → {number(found.peak / 2**20)} MiB",
        str(found.late()),
        f"{found.lost()}{again}",
    ]


def headlines(embedded: Found, across: Found, many: Found, n: int) -> list[Headline]:
    rows = []
    for found, target, where in (
        (embedded, EMBEDDED, "SQLite, `serve`"),
        (across, ACROSS, "PostgreSQL, `serve --no-worker` + worker"),
    ):
        firsts = found.firsts(LATENCY[0])
        median = statistics.median(firsts) if firsts else float("nan")
        rows.append(
            Headline(
                f"G, {where}",
                "ms from the model's first text byte to the reader's first `text.delta` (median)",
                f"≤ {target:.0f} ms",
                f"{number(median)} ms (p90 {number(quantile(firsts, 0.9))})",
                found.failed or verdict(median <= target),
            )
        )
    writes = [*embedded.writes, *across.writes]
    rows.append(
        Headline(
            "G, a 1,000-piece answer over ~1 s",
            "store writes of its text (most of any run)",
            f"≤ {WRITES}",
            str(max(writes, default=0)),
            verdict(bool(writes) and max(writes) <= WRITES),
        )
    )
    lags = many.lags()
    lost = many.lost() + embedded.lost() + across.lost()
    rows.append(
        Headline(
            f"G, {n:,} streams at once, one `serve`",
            "turns whose reader lost text or missed `turn.ended`; p99 delta ms; RSS per stream",
            "0",
            f"{lost} (p99 {number(quantile(lags, 0.99))} ms, "
            f"{number((many.peak - many.idle) / n / 1024)} KiB)",
            many.failed or verdict(lost == 0 and len(many.seen) == n),
        )
    )
    return rows


def run(ctx: Context) -> Section:
    n = ctx.size(1000, 5)
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'live.db'}"
        embedded, many = measured(ctx, "SQLite, `serve`", url, worker=False, n=n)
    with postgres_database(ADMIN_URL, ctx.log) as pg:
        across = Found("PostgreSQL, `serve --no-worker` + worker", failed="pending: no PostgreSQL")
        if pg is not None:
            across, _ = measured(ctx, across.name, pg, worker=True, n=0)
    body = DESCRIPTION + "\n" + table(LATENCY_HEADERS, [latency_row(embedded), latency_row(across)])
    body += f"\n\n**{n:,} turns at once**, one reader each, on the SQLite `serve`\n\n"
    body += table(MANY_HEADERS, [many_row(many, n)]) + "\n\n" + A_ROW
    return Section(TITLE, body, headlines(embedded, across, many, n))


LATENCY_HEADERS = [
    "setting",
    "latency turns",
    "first delta ms (median)",
    "p90",
    "each delta's lag ms (median)",
    "writes per 1,000-piece answer",
    "turns lost",
]
MANY_HEADERS = [
    "turns at once",
    "first delta ms (median, p99)",
    "each delta's lag ms (median, p99)",
    "RSS per stream",
    "`serve`'s RSS, idle → peak",
    "readers subscribed after the first byte",
    "turns lost",
]

DESCRIPTION = """\
The fake Messages API (`bench/live_fake.py`, its own process) streams each
answer piece by piece and notes, on the machine's monotonic clock, when each
piece left for the socket. `turnkeeper serve bench.live_app:assistant
--provider anthropic` calls it through the Anthropic SDK, streaming; this
process, as a page would, creates a conversation, posts a turn and reads
`GET /api/turns/{id}/events` with httpx until `turn.ended`, noting when each
`text.delta` arrives. **First delta**: that arrival minus the fake's send of
the first piece, for answers of 20 pieces 5 ms apart, the first 150 ms after
the request (the reader is subscribed by then), one turn at a time. **Each
delta's lag**: a delta's arrival minus the send of the newest piece it
carries (coalescing joins older pieces into it). **Writes**: a 1,000-piece
answer, one piece per ms (~1 s); on PostgreSQL the transactions that wrote
the turn's event rows (distinct `xmin`), on SQLite the `text.delta` events
in its log (each its own write, the last one riding the turn's final write).
**Lost**: a reader whose joined deltas differ from the answer, or whose
stream ended without `turn.ended`.
"""
A_ROW = """\
Streaming is the default for the providers; the non-streaming path (`run_turn`
with a provider that does not stream) is workload A's row, measured by
`a_loop`, and `python -m bench.compare --against <rev>` sets it against an
earlier revision.
"""
