"""`python -m bench.count`: B-store's limits row counted in instructions, not timed.

For splitting what the ledger costs (`workloads/b_store.py`'s limits row), one change
at a time. Each side (limits unset, `LIMITS` set) runs twice in fresh processes under
valgrind's callgrind, once with one batch and once with two; both batches are queued
before either runs, so the door's check is outside what is counted, and the second
run's count minus the first (every thread summed) is one batch, divided by its model
calls. Needs valgrind; two processes run at a time; about five minutes at K = 1,000.

A count does not read the clock, but it is not exact: which writes share a commit
depends on how the event loop and the database thread interleave, the hash seed lays
dicts out differently, and where a collection lands moves a side by 10 K instructions
an iteration or more. Compare counts made with the same `--seed` (PYTHONHASHSEED,
default 0) and `--collector` (`COLLECTORS`; `off` leaves only the code's own work),
on a machine running nothing else, and make more than one; the limits row's verdict
is the clock's. `python -m bench.count --run LIMITS BATCHES K [--collector C]` is one
of those processes.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from turnkeeper.service import gc_policy

from .workloads.b_concurrency import SPEC
from .workloads.b_store import embedded

SIDES = (("none", False), ("limits set", True))

COLLECTORS = {
    "default": "CPython's thresholds",
    "serve": "`serve`'s GC policy, `service/gc_policy.py`",
    "off": "no collection while the batches run: what the code itself executes",
}
"""What collects garbage while the batches run."""


async def batches(limits: bool, count: int, k: int, collector: str = "default") -> dict[str, int]:
    """B-store's batch of K turns, each asked by a user of its own, `count` times (1 or 2),
    both batches queued before the first runs (then the `collector` set: `COLLECTORS`);
    the store's turns by status."""
    async with embedded(k, users=True, limits=limits) as bench:
        queued = [await bench.queued(k, f"user{n}") for n in range(2)]
        if collector == "serve":
            gc_policy.apply()
        elif collector == "off":
            gc.collect()
            gc.disable()
        for turn_ids in queued[:count]:
            gc.collect()
            await bench.run(turn_ids)
        return await bench.store.counts()


def instructions(limits: bool, count: int, k: int, collector: str, seed: int, folder: Path) -> int:
    """What one process of `count` batches executed, every thread summed."""
    out = folder / f"callgrind.{int(limits)}.{count}"
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        "-m",
        "bench.count",
        "--run",
        str(int(limits)),
        str(count),
        str(k),
        f"--collector={collector}",
    ]
    seeded = {**os.environ, "PYTHONHASHSEED": str(seed)}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=seeded)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_iteration(limits: bool, k: int, collector: str, seed: int, folder: Path) -> float:
    with ThreadPoolExecutor(2) as pool:
        counts = pool.map(
            lambda count: instructions(limits, count, k, collector, seed, folder), (1, 2)
        )
        one, two = counts
    return (two - one) / (k * SPEC.calls)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.count", description=__doc__)
    parser.add_argument("--k", type=int, default=1000, help="turns at once (default: 1000)")
    parser.add_argument(
        "--collector",
        choices=COLLECTORS,
        default="default",
        help="what collects garbage while the batches run: default (CPython's thresholds), "
        "serve (serve's GC policy) or off (default: default)",
    )
    parser.add_argument("--seed", type=int, default=0, help="PYTHONHASHSEED (default: 0)")
    parser.add_argument("--run", nargs=3, type=int, metavar=("LIMITS", "BATCHES", "K"))
    args = parser.parse_args(argv)
    if args.run:
        limits, count, k = args.run
        asyncio.run(batches(bool(limits), count, k, args.collector))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install -y valgrind)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="turnkeeper-count-") as folder:
        counted = {
            name: per_iteration(limits, args.k, args.collector, args.seed, Path(folder))
            for name, limits in SIDES
        }
    none = counted["none"]
    print(f"B-store, K = {args.k:,}, every turn a user of its own, collector: {args.collector}")
    print(f"({COLLECTORS[args.collector]}), hash seed {args.seed}; instructions per iteration\n")
    print("| limits | instructions / iteration | ÷ none |")
    print("|---|---|---|")
    for name, value in counted.items():
        print(f"| {name} | {value:,.0f} | {value / none:.3f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
