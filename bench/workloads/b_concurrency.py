"""B. Concurrency: K turns in flight at once in one process, each 6 model calls of 50 ms."""

from __future__ import annotations

import asyncio
import gc
import time
from pathlib import Path
from typing import Any

from .. import fake
from ..contenders import label
from ..method import WorkerFailed, fresh, median, spread
from ..report import Context, Headline, Section, number, table, verdict
from ..worker import Worker

TITLE = "B. Concurrent turns"
BASE = "bare"
OURS = "turnkeeper"
SERVED = "turnkeeper-served"
PEERS = ["pydantic-ai", "openai-agents", "langgraph"]
SPEC = fake.Spec(rounds=5, delay=0.05)
IDEAL = SPEC.calls * SPEC.delay
TARGET_WALL = 1.5
TARGET_KB = 20.0
SKIPPED = "not run in the smoke run"


def status(field: str) -> int:
    """A field of /proc/self/status in kB (VmRSS: resident now; VmHWM: its peak)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def reset_peak() -> None:
    """Start VmHWM again from the current RSS (Linux ≥ 4.0)."""
    Path("/proc/self/clear_refs").write_text("5")


async def concurrent(worker: Worker, spec: dict[str, Any], k: int) -> dict[str, Any]:
    """K turns at once, after an untimed warm batch; wall, CPU and peak RSS growth per turn."""
    shape = fake.Spec(**spec)
    turn = await worker.turn(shape)
    await asyncio.gather(*(turn() for _ in range(min(k, 50))))
    gc.collect()
    reset_peak()
    base = status("VmRSS")
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(turn() for _ in range(k)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "wall": wall,
        "cpu": cpu,
        "cpu_us_per_call": cpu / (k * shape.calls) * 1e6,
        "kb_per_turn": (status("VmHWM") - base) / k,
    }


def measure(ctx: Context, name: str, k: int, timeout: float) -> dict[str, Any]:
    """One fresh worker process, one batch of K turns."""
    spec = {"rounds": SPEC.rounds, "payload": SPEC.payload, "delay": SPEC.delay}
    try:
        return fresh(name, f"{__name__}:concurrent", timeout, spec=spec, k=k)
    except WorkerFailed as e:
        ctx.log(f"  {name} K = {k}: {e}")
        return {"failed": str(e).splitlines()[0]}


def wall_ratio(answer: dict[str, Any]) -> float:
    return float(answer["wall"]) / IDEAL


def cpu_ratio(answer: dict[str, Any]) -> float:
    return float(answer["cpu"]) / IDEAL


def contenders(ctx: Context) -> list[str]:
    return [BASE, OURS, "turnkeeper-null", SERVED, *PEERS]


def rounds_for(ctx: Context, name: str, k: int) -> int:
    """Peers take 10–100× longer per batch: they get fewer rounds at the big K."""
    if ctx.smoke:
        return 0 if name in PEERS else 1
    return 5 if name not in PEERS else (3 if k <= 100 else 1)


def collect(ctx: Context, k: int) -> dict[str, list[dict[str, Any]]]:
    """Rounds of fresh-process batches, contenders alternating within each round."""
    names = contenders(ctx)
    found: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    most = max(rounds_for(ctx, n, k) for n in names)
    for r in range(most):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            if r < rounds_for(ctx, name, k):
                found[name].append(measure(ctx, name, k, timeout=300.0))
        ctx.log(f"{TITLE}: K = {k}, round {r + 1}/{most}")
    return found


def row(name: str, answers: list[dict[str, Any]], base: list[dict[str, Any]]) -> list[str]:
    bad = [a.get("pending") or a.get("failed") for a in answers if "wall" not in a]
    if bad or not answers:
        return [label(name), str(bad[0] if bad else SKIPPED), "", "", "", "", ""]
    walls = [wall_ratio(a) for a in answers]
    to_base = [wall_ratio(a) / wall_ratio(b) for a, b in zip(answers, base, strict=False)]
    return [
        label(name),
        str(len(answers)),
        f"{number(median(walls))}× ({spread(walls)})",
        number(median(to_base)),
        number(median([cpu_ratio(a) for a in answers])),
        number(median([a["cpu_us_per_call"] for a in answers])),
        number(median([a["kb_per_turn"] for a in answers])),
    ]


HEADERS = [
    "contender",
    "rounds",
    "wall ÷ ideal (median, IQR)",
    "× bare loop's wall",
    "CPU s ÷ ideal",
    "CPU µs / model call",
    "peak RSS growth, KB / turn",
]


def headlines(k: int, ours: list[dict[str, Any]], served: list[dict[str, Any]]) -> list[Headline]:
    done = [a for a in ours if "wall" in a]
    wall = median([wall_ratio(a) for a in done])
    kb = median([a["kb_per_turn"] for a in done])
    served_wall = median([wall_ratio(a) for a in served if "wall" in a])
    where = f"B, K = {k}"
    return [
        Headline(
            where,
            "wall ÷ ideal (0.30 s)",
            "≤ 1.5× at K = 1,000",
            f"{number(wall)}×",
            verdict(wall <= TARGET_WALL),
        ),
        Headline(
            where + ", as `serve` runs it",
            "wall ÷ ideal (0.30 s)",
            "≤ 1.5× at K = 1,000",
            f"{number(served_wall)}×",
            verdict(served_wall <= TARGET_WALL),
        ),
        Headline(
            where, "RSS per in-flight turn", "≤ 20 KB", f"{number(kb)} KB", verdict(kb <= TARGET_KB)
        ),
    ]


def run(ctx: Context) -> Section:
    parts, heads = [DESCRIPTION], []
    for k in (5,) if ctx.smoke else (100, 1000):
        found = collect(ctx, k)
        rows = [row(n, found[n], found[BASE]) for n in contenders(ctx)]
        parts += [f"**K = {k}** turns at once\n", table(HEADERS, rows) + "\n"]
        heads += headlines(k, found[OURS], found[SERVED])
    return Section(TITLE, "\n".join(parts), heads)


DESCRIPTION = """\
K turns start at once in one fresh worker process; each makes 6 model calls
(5 tool round trips, then the answer) that each sleep 50 ms, so the ideal wall
time is 0.30 s. Before the timed batch the worker runs one turn and then a warm
batch of min(K, 50) turns, collects garbage and resets the kernel's peak-RSS
mark (`/proc/self/clear_refs`); the RSS figure is the peak (`VmHWM`) during
the batch minus the RSS before it, divided by K: the memory each in-flight
turn costs. Every measurement is a new process; the contenders alternate
within each round. "CPU s ÷ ideal" is the process's CPU time for the batch
over 0.30 s: when it nears or passes 1 the event loop is CPU-bound and the
wall time follows it, whatever the neighbours do. The `turnkeeper` row uses
`LocalHooks` (which keeps every published state and checkpoint in memory, for
tests and the CLI); the "hooks that keep nothing" row is the runtime alone;
the row with `serve`'s GC policy is the runtime as `serve` and `worker` run
it (`turnkeeper.gc_policy`: start-up frozen, young collections every 50,000
allocations; the store's own cost is B-store's).
"""
