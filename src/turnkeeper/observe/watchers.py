"""Instruments: what a turn tells whoever watches it (spans, metrics).

A turn's `TurnWatch` is told, synchronously and cheaply: `call_started` /
`call_ended` around every model call (by the turn's `CallRoom`),
`tool_started` / `tool_ended` around every tool call (by the toolset
`watched_tools` wraps), and once, in the loop's finalisation, `turn_ended`, or
`turn_waiting` for a turn that stops to wait for a person (it is no longer in flight;
the job that resumes it watches it anew). A
`Watcher` makes one `TurnWatch` per turn; `telemetry.Telemetry` (OpenTelemetry
spans) and `metrics.Metrics` (Prometheus) are the two shipped, and `Watchers`
fans out to several. A watcher that raises is logged and the turn goes on:
watching never changes what a turn does.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ConfigError
from ..outcomes import Ending
from ..usage import Usage
from ..wire import ToolResult, ToolSpec, ToolUse
from .watched import CallEnd, TurnInfo

if TYPE_CHECKING:
    from ..providers import Provider
    from ..state import PublishedState
    from ..tools import Toolset

logger = logging.getLogger("turnkeeper.instruments")


class TurnWatch(Protocol):
    """What one turn tells its watcher, synchronously and cheaply; made by a `Watcher` per turn."""

    def call_started(self, iteration: int) -> None:
        """A model call started (`iteration` counts the turn's calls from 1)."""
        ...

    def call_ended(self, call: CallEnd) -> None:
        """A model call ended: with a response, an error, or aborted by a stop."""
        ...

    def tool_started(self, use: ToolUse) -> None:
        """A tool call started."""
        ...

    def tool_ended(self, use: ToolUse, is_error: bool) -> None:
        """A tool call ended; `is_error` if its result is an error."""
        ...

    def turn_ended(self, end: Ending, usage: Usage) -> None:
        """The turn ended, once, in the loop's finalisation."""
        ...

    def turn_waiting(self, usage: Usage) -> None:
        """Instead of `turn_ended`: the turn stopped to wait for a person (status `waiting`),
        once, in the loop's finalisation. It is no longer in flight in this process."""
        ...

    def compacted(self, summarised: int, cleared: int) -> None:
        """The turn compacted its request to stay within the model's context window:
        `summarised` turns, `cleared` tool results (a watch without this method is not
        told)."""
        ...


class Watcher(Protocol):
    """Watches turns (spans, metrics): makes one `TurnWatch` per turn."""

    def turn(self, info: TurnInfo) -> TurnWatch:
        """The watch of the turn `info` describes."""
        ...


class _Unwatched:
    """The watch of a turn nobody watches."""

    def call_started(self, iteration: int) -> None:
        pass

    def call_ended(self, call: CallEnd) -> None:
        pass

    def tool_started(self, use: ToolUse) -> None:
        pass

    def tool_ended(self, use: ToolUse, is_error: bool) -> None:
        pass

    def turn_ended(self, end: Ending, usage: Usage) -> None:
        pass

    def turn_waiting(self, usage: Usage) -> None:
        pass

    def compacted(self, summarised: int, cleared: int) -> None:
        pass


UNWATCHED = _Unwatched()


@dataclass
class Watchers:
    """Several watchers as one; each is shielded from the others' failures."""

    watchers: list[Watcher] = field(default_factory=list)

    def turn(self, info: TurnInfo) -> TurnWatch:
        watches = [w.turn(info) for w in self.watchers]
        if not watches:
            return UNWATCHED
        return _Fanout(watches)


class _Fanout:
    def __init__(self, watches: list[TurnWatch]) -> None:
        self.watches = watches

    def _each(self, method: str, *args: Any) -> None:
        for watch in self.watches:
            try:
                told = getattr(watch, method, None)
                if told is not None or method != "compacted":  # a watch written before it
                    getattr(watch, method)(*args)
            except Exception:
                logger.exception("a turn watcher failed in %s; the turn goes on", method)

    def call_started(self, iteration: int) -> None:
        self._each("call_started", iteration)

    def call_ended(self, call: CallEnd) -> None:
        self._each("call_ended", call)

    def tool_started(self, use: ToolUse) -> None:
        self._each("tool_started", use)

    def tool_ended(self, use: ToolUse, is_error: bool) -> None:
        self._each("tool_ended", use, is_error)

    def turn_ended(self, end: Ending, usage: Usage) -> None:
        self._each("turn_ended", end, usage)

    def turn_waiting(self, usage: Usage) -> None:
        self._each("turn_waiting", usage)

    def compacted(self, summarised: int, cleared: int) -> None:
        self._each("compacted", summarised, cleared)


_telemetry_missing = False
"""The otel extra was found missing once: a failed import is not cached by Python, and
trying it again on every turn would cost more than the turn's loop."""


def default_watchers() -> Watchers:
    """What watches a turn when the caller names no watcher: OpenTelemetry spans when the
    application has configured a tracer provider, else nothing."""
    global _telemetry_missing
    if _telemetry_missing:
        return Watchers()
    try:
        from .telemetry import configured
    except ConfigError:  # the otel extra is not installed: nothing to trace to
        _telemetry_missing = True
        return Watchers()
    telemetry = configured()
    return Watchers([telemetry] if telemetry is not None else [])


def watch_turn(
    watcher: Watcher | None, provider: Provider, state: PublishedState, question: str
) -> TurnWatch:
    """The watch of one turn: `watcher`'s, else the default watchers'."""
    info = TurnInfo(
        turn_id=state.turn_id,
        conversation_id=state.conversation_id,
        provider=str(provider.describe().get("provider") or provider.wire.name),
        model=provider.describe().get("model"),
        question=question,
    )
    return (watcher or default_watchers()).turn(info)


def watched_tools(toolset: Toolset, watch: TurnWatch) -> Toolset:
    """`toolset`, with `watch` told of every tool call (itself when nobody watches)."""
    return toolset if watch is UNWATCHED else _WatchedTools(toolset, watch)


class _WatchedTools:
    def __init__(self, toolset: Toolset, watch: TurnWatch) -> None:
        self.toolset = toolset
        self.watch = watch

    async def list_tools(self) -> Sequence[ToolSpec]:
        return await self.toolset.list_tools()

    async def call(self, use: ToolUse, timeout: float) -> ToolResult:
        """The tool call; one that raises or is cancelled (its time ran out) is an error."""
        self.watch.tool_started(use)
        try:
            result = await self.toolset.call(use, timeout)
        except BaseException:
            self.watch.tool_ended(use, True)
            raise
        self.watch.tool_ended(use, result.is_error)
        return result
