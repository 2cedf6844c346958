"""`turnkeeper ARGS`, paused at one point of a turn so a crash test can SIGKILL it there.

    python -m tests.crash_process POINT READY_FILE serve|worker ARGS...

At POINT (one of `POINTS`, or `none`) the process writes POINT to READY_FILE
and blocks for good: the test then kills it. A test-only hook, patched in
here: turnkeeper itself has no such switch.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from turnkeeper import cli
from turnkeeper.service.job import StoreHooks
from turnkeeper.tools.functions import FunctionToolset

POINTS = {
    "before the first call": (StoreHooks, "started", "after", 1),
    "between the call and its checkpoint": (StoreHooks, "checkpoint", "before", 2),
    "during a tool call": (FunctionToolset, "call", "before", 2),
    "during finalisation": (StoreHooks, "finish", "before", 1),
}
"""Where to pause: the method, before or after it runs, and at which of its calls (the
second iteration's checkpoint and tool call, so that one checkpoint lies behind them)."""


def pausing(point: str, ready: Path) -> None:
    """Patch the method at `point` to signal readiness and block at its nth call."""
    owner, name, when, nth = POINTS[point]
    original: Callable[..., Awaitable[Any]] = getattr(owner, name)
    calls = 0

    async def paused(self: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls < nth:
            return await original(self, *args, **kwargs)
        result = await original(self, *args, **kwargs) if when == "after" else None
        await asyncio.to_thread(ready.write_text, point)
        await asyncio.Event().wait()
        return result

    setattr(owner, name, paused)


if __name__ == "__main__":
    point, ready = sys.argv[1], Path(sys.argv[2])
    if point != "none":
        pausing(point, ready)
    sys.exit(cli.main(sys.argv[3:]))
