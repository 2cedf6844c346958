"""How the contenders are measured: worker processes taking turns in short slices.

Each contender runs in its own process (so frameworks never share an
interpreter, a heap or an event loop). A round asks every contender for one
short slice, one after the other, in an order that rotates from round to
round; nothing else of ours runs meanwhile. A workload then takes, round by
round, the ratio of each contender to the baseline measured in that round, and
reports the median of those ratios: noise from the neighbours hits both sides
of a ratio alike, and a round that was hit unevenly lands in the tails.
"""

from __future__ import annotations

import json
import os
import selectors
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class WorkerFailed(Exception):
    """A worker died, answered with an error, or took longer than allowed."""


@dataclass
class Process:
    name: str
    proc: subprocess.Popen[str]
    log: Any
    pending: str | None = None

    def request(self, run: str, timeout: float, **args: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"run": run, "args": args}) + "\n")
        self.proc.stdin.flush()
        answer = self.read(timeout)
        if "error" in answer:
            raise WorkerFailed(f"{self.name}: {answer['error']}")
        return answer

    def read(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout):
                self.close()
                raise WorkerFailed(f"{self.name}: no answer within {timeout:.0f} s")
        line = self.proc.stdout.readline()
        if not line:
            raise WorkerFailed(f"{self.name}: the worker died\n{self.stderr_tail()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def stderr_tail(self) -> str:
        self.log.seek(0)
        return "".join(self.log.read().splitlines(keepends=True)[-15:])

    def hang_up(self) -> None:
        """Close the worker's stdin: it finishes its request, if any, and exits."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()

    def close(self) -> None:
        self.hang_up()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def start(name: str) -> Process:
    """Start the worker of contender `name` (it loads its framework in the background)."""
    log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed by Process.close)
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "PYTHONHASHSEED": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.worker", name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        cwd=ROOT,
        env=env,
    )
    return Process(name, proc, log)


def ready(process: Process, timeout: float = 120.0) -> Process:
    """Wait until the worker has loaded its contender; note why if it cannot run."""
    hello = process.read(timeout)
    process.pending = hello.get("pending")
    return process


class Pool:
    """Live workers, one per contender, started on first use and kept for the whole run."""

    def __init__(self) -> None:
        self.live: dict[str, Process] = {}

    def get(self, names: Sequence[str]) -> dict[str, Process]:
        """The workers of `names`; those not yet running start at once, side by side."""
        started = [start(n) for n in names if n not in self.live]
        for p in started:
            self.live[p.name] = ready(p)
        return {n: self.live[n] for n in names}

    def close(self) -> None:
        for p in self.live.values():
            p.hang_up()
        for p in self.live.values():
            p.close()
        self.live.clear()


@contextmanager
def workers(names: Sequence[str]) -> Iterator[dict[str, Process]]:
    """Workers of `names` for the length of the block."""
    pool = Pool()
    try:
        yield pool.get(names)
    finally:
        pool.close()


def fresh(name: str, run: str, timeout: float, **args: Any) -> dict[str, Any]:
    """One request in a new worker process that exits afterwards."""
    with workers([name]) as pool:
        process = pool[name]
        if process.pending:
            return {"pending": process.pending}
        return process.request(run, timeout, **args)


@dataclass
class Rounds:
    """Per-round answers of each contender."""

    names: list[str]
    answers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def values(self, name: str, key: Callable[[dict[str, Any]], float]) -> list[float]:
        return [key(a) for a in self.answers.get(name, [])]

    def ratios(self, name: str, base: str, key: Callable[[dict[str, Any]], float]) -> list[float]:
        """`name` ÷ `base`, round by round."""
        return [a / b for a, b in zip(self.values(name, key), self.values(base, key), strict=True)]


def alternate(
    pool: dict[str, Process],
    run: str,
    rounds: int,
    timeout: float,
    log: Callable[[str], None],
    **args: Any,
) -> Rounds:
    """`rounds` rounds of one request to every live contender, in a rotating order."""
    names = [n for n, p in pool.items() if not p.pending]
    sides = {n: (lambda p=pool[n]: p.request(run, timeout, **args)) for n in names}
    return Rounds(names, interleaved(rounds, sides, log))


def interleaved(
    rounds: int, sides: Mapping[str, Callable[[], dict[str, Any]]], log: Callable[[str], None]
) -> dict[str, list[dict[str, Any]]]:
    """`rounds` rounds of one measurement per side, the order rotating each round."""
    names = list(sides)
    answers: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            answers[name].append(sides[name]())
        log(f"  round {r + 1}/{rounds}")
    return answers


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def spread(values: Sequence[float]) -> str:
    """The interquartile range of `values`, as text."""
    if len(values) < 4:
        return "–"
    q = statistics.quantiles(values, n=4)
    return f"{short(q[0])}–{short(q[2])}"


def short(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
