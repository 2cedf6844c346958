"""Replay: a recorded turn run again offline, through the same `run_turn`.

The recorded responses and errors are fed back in order, the tool results
come from the recorded history, the clock returns the recorded readings, and
the cancel flag is seen at the same check (or aborts the same call), so every
decision and outcome comes out the same (`first_difference` says where it does not).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import ConfigError, ProviderFailed, provider_error_from
from ..observe.report import Report
from ..outcomes import Outcome
from ..providers import TextSink, wire_format
from ..store.records import Compacted, ModelCall
from ..usage import TOKENS_PER_DAY
from ..wire import Message, Reply, ToolResult, ToolSpec, ToolUse, WireFormat
from .approvals import Resume
from .compaction import Compaction
from .hooks import LocalHooks
from .loop import TurnResult, run_turn
from .setting import TurnSetting
from .trace import Trace


class ReplayProvider:
    """Answers each call with the recorded response or error, in order; a call a stop
    aborted calls `stop` and never answers, so the stop aborts it again."""

    def __init__(self, trace: Trace, wire: WireFormat, stop: Callable[[], None]) -> None:
        self.wire = wire
        self._stop = stop
        self._calls: list[ModelCall] = list(trace.calls)
        self._request = trace.request

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        """The next recorded response; a replay streams no text (`on_text` is not called)."""
        if not self._calls:
            raise ProviderFailed("the trace holds no more model calls")
        call = self._calls.pop(0)
        if call.stopped:
            self._stop()
            await asyncio.Event().wait()
        if call.error is not None:
            raise provider_error_from(call.error)
        return self.wire.parse_reply(call.response)

    def calls_left(self) -> int:
        """How many recorded calls are not answered yet."""
        return len(self._calls)

    def user_message(self, text: str) -> Message:
        return self.wire.user_message(text)

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        return self.wire.tool_results(results)

    def describe(self) -> dict[str, Any]:
        return dict(self._request)


class ReplayTools:
    """Answers each tool use with the result recorded in the trace's history."""

    def __init__(self, recorded: Mapping[str, ToolResult], names: Sequence[str]) -> None:
        self._recorded = recorded
        self._names = names

    async def list_tools(self) -> Sequence[ToolSpec]:
        return [ToolSpec(name, "") for name in self._names]

    async def call(self, use: ToolUse, timeout: float) -> ToolResult:
        found = self._recorded.get(use.id)
        return found or ToolResult(use.id, "the trace holds no result for this tool use", True)


class ReplayClock:
    """Returns the recorded clock readings in order, then the last one."""

    def __init__(self, readings: Sequence[float]) -> None:
        self._readings = list(readings) or [0.0]
        self._next = 0

    def __call__(self) -> float:
        i = min(self._next, len(self._readings) - 1)
        self._next += 1
        return self._readings[i]


class ReplayHooks(LocalHooks):
    """Says stop at the same check the recorded turn saw its cancel flag, and during the
    call a stop aborted (`stop()`, from the `ReplayProvider`); says a day's limit is used
    up at the check after the last recorded call of a turn that ended `limit_reached`
    (once `calls_left()` says none is left: a check is made before every call, the loop's
    and compaction's alike)."""

    def __init__(self, stopped_at_check: int | None, limited: bool = False) -> None:
        super().__init__(reporter=_quiet)
        self._stop_at = stopped_at_check
        self._limited = limited
        self._checks = 0
        self.calls_left: Callable[[], int] = lambda: 1
        """How many recorded calls the replay has not answered yet."""

    async def should_stop(self) -> bool:
        self._checks += 1
        return self._checks == self._stop_at

    def limit_reached(self) -> str | None:
        return TOKENS_PER_DAY if self._limited and self.calls_left() == 0 else None


def _quiet(report: Report) -> None:
    """Replay re-reports nothing: the original run did."""


async def replay(trace: Trace) -> TurnResult:
    """Run the recorded turn again offline."""
    wire = wire_format(trace.wire)
    compaction, compacted = _compaction(trace)
    names = sorted({n for call in trace.calls for n in call.tools or ()})
    hooks = ReplayHooks(trace.stopped_at_check, trace.outcome is Outcome.LIMIT_REACHED)
    provider = ReplayProvider(trace, wire, hooks.stop)
    hooks.calls_left = provider.calls_left
    return await run_turn(
        trace.question,
        provider=provider,
        toolset=ReplayTools(wire.recorded_results(trace.history), names),
        history=trace.history[: trace.prior],
        budget=trace.budget,
        hooks=hooks,
        setting=TurnSetting(
            turn_id=trace.turn_id or "t_replay",
            resume=trace.resume or Resume(),
            clock=ReplayClock(trace.clock),
            compaction=compaction,
            compacted=compacted,
        ),
    )


def _compaction(trace: Trace) -> tuple[Compaction | None, Compacted | None]:
    """The compaction settings and record the recorded turn ran with (its request's
    `compaction`), so the replay builds the same requests; `ConfigError` if unusable."""
    traced = trace.request.get("compaction")
    if traced is None:
        return None, None
    settings = traced.get("settings") if isinstance(traced, dict) else None
    if not isinstance(settings, dict):
        raise ConfigError("the trace's compaction has no settings")
    try:
        compaction = Compaction(**settings)
    except TypeError as e:
        raise ConfigError(f"the trace's compaction settings are malformed: {e}") from None
    record = traced.get("record")
    return compaction, None if record is None else Compacted.from_json(record)


def first_difference(recorded: Trace, replayed: Trace) -> str | None:
    """The first way the replayed trace differs from the recorded one, or None."""
    for i, (then, again) in enumerate(zip(recorded.calls, replayed.calls, strict=False), 1):
        was, now = _decision(then), _decision(again)
        if was != now:
            return f"call {i}: recorded {was}, replayed {now}"
    if len(recorded.calls) != len(replayed.calls):
        return f"recorded {len(recorded.calls)} model calls, replayed {len(replayed.calls)}"
    if recorded.outcome != replayed.outcome:
        return f"outcome: recorded {recorded.outcome}, replayed {replayed.outcome}"
    for i, (kept, made) in enumerate(zip(recorded.history, replayed.history, strict=False), 1):
        if kept != made:
            return f"history message {i} differs"
    if len(recorded.history) != len(replayed.history):
        return "the replayed history has a different length"
    return None


def _decision(call: ModelCall) -> str:
    if call.error is not None:
        return f"error {call.error.get('kind')}"
    return str(call.decision)
