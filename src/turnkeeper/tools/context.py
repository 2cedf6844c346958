"""What a tool may know about the turn that called it: who asked, in which language, where.

A queued job has no request: no session, no locale, no signed-in user unless
they were passed along (docs/design.md §11). So the API
captures them when it queues the turn, the store keeps them in the turn's row,
and the job hands them to `run_turn` in its `TurnSetting`, which makes them the
`current()` context while the turn runs. A tool whose first parameter is annotated `ToolContext`
receives it, the same in the serving process and in a worker on another machine:

    @tool
    def my_orders(ctx: ToolContext, status: str = "open") -> list[Order]:
        return orders.of(ctx.user, status=status)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ToolContext:
    """The turn a tool runs in, as it was captured when the turn was queued."""

    user: str | None
    """The id of the application's user who asked (from `authenticate`), or None."""
    locale: str
    """The reader's locale as negotiated against the catalogs (`fr`, `pt-BR`, `en`)."""
    conversation_id: str
    turn_id: str


_current: ContextVar[ToolContext | None] = ContextVar("turnkeeper_tool_context", default=None)


def current() -> ToolContext:
    """The context of the turn running now; outside one (a toolset called directly), a
    local one with no user."""
    found = _current.get()
    return found if found is not None else ToolContext(None, "en", "c_local", "t_local")


@contextlib.contextmanager
def running(context: ToolContext) -> Iterator[None]:
    """`context` is `current()` in this task, and in the tasks and tool threads it starts."""
    token = _current.set(context)
    try:
        yield
    finally:
        _current.reset(token)
