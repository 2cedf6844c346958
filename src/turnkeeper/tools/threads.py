"""Daemon threads for sync tools, reused between calls.

Not `asyncio.to_thread`: its pool is joined when the event loop and the
interpreter shut down, so one hung tool would hang the process after its turn
timed out. Not a new thread per call either: starting a thread costs more than
the rest of an iteration. Idle workers wait for the next call and leave after
`IDLE_SECONDS`; when none is idle, a new one starts, so a hung tool never
blocks another.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

IDLE_SECONDS = 30.0

_Job = tuple[
    contextvars.Context, Callable[[Any], Any], Any, Callable[[Any, BaseException | None], None]
]

_jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
_idle = 0
_lock = threading.Lock()


async def in_thread(function: Callable[[Any], Any], arg: Any) -> Any:
    """`function(arg)` in a daemon worker thread, awaited without blocking the event loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():
            return  # the caller gave up (timeout or cancel)
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def done(value: Any, error: BaseException | None) -> None:
        # If the event loop closed while the function ran, nobody is waiting for it.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, value, error)

    _submit((contextvars.copy_context(), function, arg, done))
    return await future


def _submit(job: _Job) -> None:
    global _idle
    with _lock:
        start = _idle == 0
        if not start:
            _idle -= 1
    _jobs.put(job)
    if start:
        threading.Thread(target=_work, name="turnkeeper-tool", daemon=True).start()


def _work() -> None:
    global _idle
    while True:
        try:
            context, function, arg, done = _jobs.get(timeout=IDLE_SECONDS)
        except queue.Empty:
            with _lock:
                if _idle > 0:
                    _idle -= 1
                    return
            continue  # a job was handed to this worker as it timed out: take it
        value, error = None, None
        try:
            value = context.run(function, arg)
        except BaseException as e:
            error = e
        done(value, error)
        with _lock:
            _idle += 1
