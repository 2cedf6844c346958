"""Daemon threads for sync tools, reused between calls.

Not `asyncio.to_thread`: its pool is joined when the event loop and the
interpreter shut down, so one hung tool would hang the process after its turn
timed out. Not a new thread per call either: starting a thread costs more than
the rest of an iteration. Idle workers wait for the next call and leave after
`IDLE_SECONDS`; when none is idle, a new one starts, so a hung tool never
blocks another.

Handing a call to a thread and back through the event loop (a future settled
with `call_soon_threadsafe`) wakes the loop's selector, and costs more CPU
than the rest of an iteration. Most sync tools are quick, so the event loop
first waits on a plain lock for up to `GRACE` seconds, as if the tool ran
inline: a quick tool answers there, with two thread wake-ups and no trip
through the selector. A call that outlasts the grace is parked on a future and
the loop goes on; its function is then handed over without a grace until it
is quick again, so a slow tool costs the loop `GRACE` once, not on every call.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

IDLE_SECONDS = 30.0

GRACE = 0.0005
"""Seconds the event loop waits for a sync tool before parking the call on a future."""


class _Call:
    """One call of a sync function, shared by the event loop and a worker thread."""

    __slots__ = ("answered", "arg", "context", "error", "function", "future", "loop", "value")

    def __init__(self, function: Callable[[Any], Any], arg: Any) -> None:
        self.function = function
        self.arg = arg
        self.context = contextvars.copy_context()
        self.value: Any = None
        self.error: BaseException | None = None
        self.answered = threading.Lock()
        """Held until the worker has the outcome, while nobody waits on `future`."""
        self.answered.acquire()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.future: asyncio.Future[Any] | None = None
        """Set when the event loop stopped waiting on `answered`, under `_lock`."""

    def outcome(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


_calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
_idle = 0
_lock = threading.Lock()
_slow: weakref.WeakSet[Callable[[Any], Any]] = weakref.WeakSet()
"""Functions whose last call outlasted the grace: handed over without one."""


async def in_thread(function: Callable[[Any], Any], arg: Any) -> Any:
    """`function(arg)` in a daemon worker thread; the event loop blocks at most `GRACE` for it."""
    call = _Call(function, arg)
    _submit(call)
    if function not in _slow and call.answered.acquire(timeout=GRACE):
        return call.outcome()
    with _lock:
        if call.answered.locked():  # still running: the worker settles the future
            call.loop = asyncio.get_running_loop()
            call.future = call.loop.create_future()
            with contextlib.suppress(TypeError):  # a builtin cannot be weakly referenced
                _slow.add(function)
    if call.future is None:  # answered between the grace and the lock
        return call.outcome()
    return await call.future


def _submit(call: _Call) -> None:
    global _idle
    with _lock:
        start = _idle == 0
        if not start:
            _idle -= 1
    _calls.put(call)
    if start:
        threading.Thread(target=_work, name="turnkeeper-tool", daemon=True).start()


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    """On the event loop: hand the outcome to the caller, unless it gave up (timeout, cancel)."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def _run(call: _Call) -> None:
    """In a worker: run the call, then answer whoever waits for it."""
    global _idle
    started = time.perf_counter()
    try:
        call.value = call.context.run(call.function, call.arg)
    except BaseException as e:
        call.error = e
    quick = time.perf_counter() - started < GRACE
    with _lock:
        if quick:
            with contextlib.suppress(TypeError):
                _slow.discard(call.function)
        _idle += 1  # before answering: a call queued meanwhile waits for this worker
        future, loop = call.future, call.loop
        call.answered.release()
    if future is not None and loop is not None:
        # If the event loop closed while the function ran, nobody is waiting for it.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, future, call.value, call.error)


def _work() -> None:
    global _idle
    while True:
        try:
            call = _calls.get(timeout=IDLE_SECONDS)
        except queue.Empty:
            with _lock:
                if _idle > 0:
                    _idle -= 1
                    return
            continue  # a call was handed to this worker as it timed out: take it
        _run(call)
        del call
