"""What a workload hands back, and how RESULTS.md is written from it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .method import Pool, Process

PENDING = "pending"


@dataclass
class Headline:
    """One row of the summary: a workload's measure against its target."""

    workload: str
    measure: str
    target: str
    result: str
    verdict: str
    """`met`, `missed`, or why there is no result (`pending: …`)."""


@dataclass
class Section:
    title: str
    body: str
    headlines: list[Headline] = field(default_factory=list)


@dataclass
class Context:
    """What a workload's `run` gets: the run's size and a progress log."""

    smoke: bool
    log: Callable[[str], None]
    pool: Pool = field(default_factory=Pool)
    """Workers shared by the workloads that measure in live processes (A, A-wire, C)."""

    def workers(self, names: Sequence[str]) -> dict[str, Process]:
        return self.pool.get(names)

    def size(self, full: int, smoke: int) -> int:
        return smoke if self.smoke else full


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def verdict(met: bool) -> str:
    return "met" if met else "**missed**"


def number(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant digits, never in scientific notation for big values."""
    if value != value:
        return "–"
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def summary(sections: Sequence[Section]) -> str:
    rows = [
        [h.workload, h.measure, h.target, h.result, h.verdict]
        for s in sections
        for h in s.headlines
    ]
    return table(["workload", "measure", "target", "this run", "verdict"], rows)
