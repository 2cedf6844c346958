"""The benchmark suite (bench/) still runs end to end; tiny sizes, no timing asserted."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PEERS = ("pydantic_ai", "agents", "langgraph", "langchain_core", "anthropic")
HEADLINES = (
    "| A, N = 2 | CPU µs per model call |",
    "| A, N = 2 | sync tool ÷ async tool |",
    "| A, N = 2 | pydantic-ai ÷ turnkeeper |",
    "| A, N = 2 | openai-agents ÷ turnkeeper |",
    "| A, N = 2 | langgraph ÷ turnkeeper |",
    "| A-wire, N = 2 |",
    "| B, K = 5 | wall ÷ ideal (0.30 s) |",
    "| B, K = 5 | RSS per in-flight turn |",
    "| B-store, K = 5 | iterations per second, one process |",
    "| B, K = 5, as `serve` runs it | wall ÷ ideal (0.30 s) |",
    "| B-store, K = 5, `serve`'s GC policy | iterations per second, one process |",
    "| C, no store |",
    "| C, SQLite | µs / iteration at 11–20 ÷ at 1–10 |",
    "| C, PostgreSQL |",
    "| D | requests / s ÷ bare Starlette |",
    "| Scale-out, K = 5, 2 slots per worker | turns/s, two workers ÷ one |",
    "| Scale-out, K = 5 | turns not run exactly once | 0 | 0 | met |",
)
CONTENDERS = (
    "bare loop (baseline)",
    "turnkeeper `run_turn`",
    "turnkeeper `run_turn`, sync tool",
    "turnkeeper `run_turn`, hooks that keep nothing, `serve`'s GC policy",
    "pydantic-ai `Agent.run`",
    "openai-agents `Runner.run`",
    "langgraph `create_react_agent`",
    "anthropic SDK tool runner",
    "turnkeeper `run_turn`, `AnthropicProvider`",
    "turnkeeper `TurnJob`, SQLite store",
    "bare Starlette endpoint (baseline)",
    "turnkeeper `GET /api/turns/{id}?after=N`",
)


@pytest.mark.skipif(
    any(importlib.util.find_spec(p) is None for p in PEERS) and not os.environ.get("CI"),
    reason="the bench extra (the peers) is not installed; under CI it must be",
)
def test_smoke_run_writes_every_row(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    run = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,  # every workload's worker processes start; slow on a busy machine
    )
    assert run.returncode == 0, run.stderr[-3000:]
    text = out.read_text(encoding="utf-8")
    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    for headline in HEADLINES:
        assert headline in summary, headline
    for name in CONTENDERS:
        rows = [line for line in text.splitlines() if line.startswith(f"| {name} |")]
        measured = [line for line in rows if line.split("|")[2].strip()[:1].isdigit()]
        assert measured, rows
    assert "failed" not in text, run.stderr[-3000:]
