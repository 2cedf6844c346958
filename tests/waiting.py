"""Waiting on state with a bound, never on a fixed sleep."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

STARTING = 60.0
"""Seconds a process the tests start (`serve`, a worker) may take to answer: its imports
and migrations, on a 2-core machine that runs the suite's workers side by side."""


async def eventually(
    condition: Callable[[], Awaitable[bool]], what: str, bound: float = 15
) -> None:
    """Poll `condition` until it holds; fail saying `what` did not happen within `bound` seconds."""
    try:
        async with asyncio.timeout(bound):
            # Polling: the state lives in a database another process writes to.
            while not await condition():  # noqa: ASYNC110
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"{what} did not happen within {bound} s") from None
