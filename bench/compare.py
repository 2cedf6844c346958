"""`python -m bench.compare --against REV`: this checkout's A and B rows against another
revision's, interleaved in one run.

A refactoring must leave the hot paths no slower, and two runs on two days on a
shared machine cannot show that: the neighbours' load moves the absolute times
more than the change does. So both revisions run side by side: REV is checked
out into a temporary git worktree, and each measurement alternates a worker
process of this checkout with one of REV's (its own `src/` and its own
`bench/`, so each side measures its code with its own contenders), the order
rotating from round to round. Printed: per row, each side's median and the
median of the per-round ratios this ÷ REV, with their interquartile range.

- A: one turn of N = 10 tool round trips against the instant fake model, no
  store (`bench.workloads.a_loop:slice`), CPU µs per model call.
- B: K = 1,000 turns at once in one fresh process, six 50 ms model calls each
  (`bench.workloads.b_concurrency:concurrent`), wall seconds and CPU µs per call.

`python -m bench.compare --limits` compares this checkout with itself instead: B-store's
batch (K turns through `LocalQueue`, `TurnJob` and SQLite, every turn with a user of its
own) with no limits against the same with limits set for every user, a third batch
with none again as the control (how far the setting reads from itself), and the first
two again under `serve`'s GC policy, fresh processes rotating round by round
(`bench.workloads.b_store:with_limits`); ratio = limits ÷ none.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .method import ROOT, Process, interleaved, median, ready, spread

A_RUN = "bench.workloads.a_loop:slice"
B_RUN = "bench.workloads.b_concurrency:concurrent"
A_SPEC = {"rounds": 10, "payload": 200, "delay": 0.0}
B_SPEC = {"rounds": 5, "payload": 200, "delay": 0.05}


def start(root: Path, contender: str = "turnkeeper") -> Process:
    """The worker of `contender` from the checkout at `root`: its own code and its own bench."""
    log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed by Process.close)
    path = os.pathsep.join([str(root / "src"), str(root)])
    env = {**os.environ, "PYTHONPATH": path, "PYTHONHASHSEED": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.worker", contender],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        cwd=root,
        env=env,
    )
    return ready(Process(f"{contender}@{root.name}", proc, log))


@contextmanager
def checkout(rev: str) -> Iterator[Path]:
    """REV in a temporary git worktree, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="turnkeeper-bench-") as parent:
        path = Path(parent) / "before"
        git = ["git", "-C", str(ROOT)]
        subprocess.run([*git, "worktree", "add", "--detach", "-q", str(path), rev], check=True)
        try:
            yield path
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(path)], check=False)


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def row(
    title: str,
    answers: dict[str, list[dict[str, Any]]],
    key: str,
    now_before: tuple[str, str] = ("now", "before"),
) -> str:
    """One table row: each side's median, and the median ratio now ÷ before with its IQR."""
    now = [float(a[key]) for a in answers[now_before[0]]]
    before = [float(a[key]) for a in answers[now_before[1]]]
    ratios = [a / b for a, b in zip(now, before, strict=True)]
    return (
        f"| {title} | {median(before):.4g} | {median(now):.4g} "
        f"| {median(ratios):.3f} | {spread(ratios)} |"
    )


def measure_a(before: Path, rounds: int, seconds: float) -> dict[str, list[dict[str, Any]]]:
    processes = {"now": start(ROOT), "before": start(before)}
    try:
        sides = {
            name: (lambda p=p: p.request(A_RUN, 600.0, spec=A_SPEC, seconds=seconds))
            for name, p in processes.items()
        }
        return interleaved(rounds, sides, progress)
    finally:
        for p in processes.values():
            p.close()


def fresh_b(root: Path, k: int) -> dict[str, Any]:
    process = start(root)
    try:
        return process.request(B_RUN, 600.0, spec=B_SPEC, k=k)
    finally:
        process.close()


def measure_b(before: Path, rounds: int, k: int) -> dict[str, list[dict[str, Any]]]:
    sides = {"now": lambda: fresh_b(ROOT, k), "before": lambda: fresh_b(before, k)}
    return interleaved(rounds, sides, progress)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--against", metavar="REV", help="the revision before")
    which.add_argument(
        "--limits", action="store_true", help="B-store with limits set against none, no REV"
    )
    parser.add_argument("--rounds", type=int, default=15, help="rounds per row (default: 15)")
    parser.add_argument("--k", type=int, default=1000, help="B's turns at once (default: 1000)")
    parser.add_argument("--rows", default="a,b", help="which rows: a, b or a,b (default: a,b)")
    args = parser.parse_args(argv)
    if args.limits:
        return limits(args.rounds, args.k)
    rows = set(args.rows.split(","))
    lines = []
    with checkout(args.against) as before:
        if "a" in rows:
            print(f"A: N = 10, {args.rounds} rounds of 1 s slices", file=sys.stderr)
            a = measure_a(before, args.rounds, 1.0)
            lines += [row("A: CPU µs per model call", a, "cpu_us")]
            lines += [row("A: wall µs per model call", a, "wall_us")]
        if "b" in rows:
            print(f"B: K = {args.k}, {args.rounds} rounds of fresh processes", file=sys.stderr)
            b = measure_b(before, args.rounds, args.k)
            lines += [row(f"B (K = {args.k}): wall seconds", b, "wall")]
            lines += [row(f"B (K = {args.k}): CPU µs per model call", b, "cpu_us_per_call")]
    print(f"this checkout against {args.against}, interleaved; ratio = now ÷ before\n")
    print("| row | before (median) | now (median) | ratio (median) | ratio IQR |")
    print("|---|---|---|---|---|")
    print("\n".join(lines))
    return 0


def limits(rounds: int, k: int) -> int:
    """B-store's batch with limits set for every user against none, interleaved."""
    from .report import Context
    from .workloads import b_store

    print(f"B-store: K = {k}, {rounds} rounds of fresh processes", file=sys.stderr)
    ctx = Context(smoke=False, log=progress)
    sides = b_store.with_limits(ctx, k, rounds)
    failed = [a["failed"] for side in sides.values() for a in side if "failed" in a]
    if failed:
        print("\n".join(failed), file=sys.stderr)
        return 1
    named = ("limits", "none")
    print("this checkout, limits set against none, interleaved; ratio = limits ÷ none\n")
    print("| row | none (median) | limits set (median) | ratio (median) | ratio IQR |")
    print("|---|---|---|---|---|")
    print(row(f"B-store (K = {k}): iterations per second", sides, "per_second", named))
    print(row(f"B-store (K = {k}): CPU µs per iteration", sides, "cpu_us", named))
    print(row(f"B-store (K = {k}): CPU µs per turn queued", sides, "queue_cpu_us", named))
    print(row(f"B-store (K = {k}): writes per iteration", sides, "writes", named))
    served = ("served limits", "served none")
    print(row("`serve`'s GC policy: CPU µs per iteration", sides, "cpu_us", served))
    control = ("again", "none")
    print(row("the control, none again ÷ none: CPU µs per iteration", sides, "cpu_us", control))
    return 0


if __name__ == "__main__":
    sys.exit(main())
