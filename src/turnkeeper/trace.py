"""Traces: a turn as JSON that can be saved, read back, replayed and summarised.

A trace holds the whole history verbatim, one record per model call (the raw
response or the error, its duration, the per-call timeout used, the decision),
every clock reading the loop made, and the outcome. Replay feeds the recorded
responses, errors, tool results and clock readings back through `run_turn`, so
every decision and outcome, `time_limit` included, comes out the same.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .budget import Budget
from .errors import ConfigError, ProviderFailed, provider_error_from
from .hooks import LocalHooks
from .loop import TurnResult, run_turn
from .providers import wire_format
from .report import Report
from .wire import Message, Reply, ToolResult, ToolSpec, ToolUse, WireFormat

FORMAT = "turnkeeper.trace/1"
REQUIRED = ("wire", "question", "prior", "history", "calls", "clock", "outcome", "budget")


def write_trace(trace: dict[str, Any], path: str | Path) -> None:
    Path(path).write_text(json.dumps(trace, ensure_ascii=False, indent=1) + "\n", "utf-8")


def read_trace(path: str | Path) -> dict[str, Any]:
    """A trace from a file; `ConfigError` saying why if it cannot be used."""
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigError(f"cannot read trace {path}: {e}") from e
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConfigError(f"{path} is not a turnkeeper trace ({FORMAT})")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise ConfigError(f"trace {path} lacks {', '.join(missing)}")
    wrong = _malformed(data)
    if wrong:
        raise ConfigError(f"trace {path} is malformed: {wrong}")
    return data


def _malformed(data: dict[str, Any]) -> str | None:
    """What is wrong with the shape of a trace's fields, or None."""

    def objects(value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)

    checks = [
        (objects(data["calls"]), "calls must be a list of objects"),
        (objects(data["history"]), "history must be a list of messages"),
        (
            isinstance(data["clock"], list)
            and all(isinstance(t, int | float) for t in data["clock"]),
            "clock must be a list of numbers",
        ),
        (isinstance(data["question"], str), "question must be text"),
        (
            isinstance(data["prior"], int) and 0 <= data["prior"] <= len(data["history"] or []),
            "prior must count messages of the history",
        ),
        (isinstance(data["budget"], dict), "budget must be an object"),
    ]
    return next((why for ok, why in checks if not ok), None)


class ReplayProvider:
    """Answers each call with the recorded response or error, in order."""

    def __init__(self, trace: dict[str, Any], wire: WireFormat) -> None:
        self.wire = wire
        self._calls: list[dict[str, Any]] = list(trace["calls"])
        self._request = trace.get("request", {})

    async def complete(
        self, history: Sequence[Message], tools: Sequence[ToolSpec], timeout: float
    ) -> Reply:
        if not self._calls:
            raise ProviderFailed("the trace holds no more model calls")
        call = self._calls.pop(0)
        if call.get("error") is not None:
            raise provider_error_from(call["error"])
        return self.wire.parse_reply(call.get("response"))

    def user_message(self, text: str) -> Message:
        return self.wire.user_message(text)

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        return self.wire.tool_results(results)

    def describe(self) -> dict[str, Any]:
        return dict(self._request)


class ReplayTools:
    """Answers each tool use with the result recorded in the trace's history."""

    def __init__(self, recorded: dict[str, ToolResult], names: Sequence[str]) -> None:
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
    """Says stop at the same check the recorded turn saw its cancel flag."""

    def __init__(self, stopped_at_check: int | None) -> None:
        super().__init__(reporter=_quiet)
        self._stop_at = stopped_at_check
        self._checks = 0

    async def should_stop(self) -> bool:
        self._checks += 1
        return self._checks == self._stop_at


def _quiet(report: Report) -> None:
    """Replay re-reports nothing: the original run did."""


async def replay(trace: dict[str, Any]) -> TurnResult:
    """Run the recorded turn again offline."""
    wire = wire_format(trace["wire"])
    history: list[Message] = trace["history"]
    names = sorted({n for call in trace["calls"] for n in call.get("tools", [])})
    try:
        budget = Budget(**trace["budget"])
    except TypeError as e:
        raise ConfigError(f"trace budget is unusable: {e}") from e
    return await run_turn(
        trace["question"],
        provider=ReplayProvider(trace, wire),
        toolset=ReplayTools(wire.recorded_results(history), names),
        history=history[: trace["prior"]],
        budget=budget,
        hooks=ReplayHooks(trace.get("stopped_at_check")),
        clock=ReplayClock(trace["clock"]),
        turn_id=trace.get("turn_id", "t_replay"),
    )


def first_difference(recorded: dict[str, Any], replayed: dict[str, Any]) -> str | None:
    """The first way the replayed trace differs from the recorded one, or None."""
    for i, (a, b) in enumerate(zip(recorded["calls"], replayed["calls"], strict=False), 1):
        was, now = _decision(a), _decision(b)
        if was != now:
            return f"call {i}: recorded {was}, replayed {now}"
    if len(recorded["calls"]) != len(replayed["calls"]):
        return f"recorded {len(recorded['calls'])} model calls, replayed {len(replayed['calls'])}"
    if recorded["outcome"] != replayed["outcome"]:
        return f"outcome: recorded {recorded['outcome']}, replayed {replayed['outcome']}"
    for i, (a, b) in enumerate(zip(recorded["history"], replayed["history"], strict=False), 1):
        if a != b:
            return f"history message {i} differs"
    if len(recorded["history"]) != len(replayed["history"]):
        return "the replayed history has a different length"
    return None


def _decision(call: dict[str, Any]) -> str:
    error = call.get("error")
    if error is not None:
        return f"error {error.get('kind')}"
    return str(call.get("decision"))


def summary(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per model call: stop reason or error, tokens, seconds, tools called."""
    rows = []
    for call in trace["calls"]:
        response = call.get("response")
        usage = response.get("usage") if isinstance(response, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        error = call.get("error")
        rows.append(
            {
                "iteration": call.get("iteration"),
                "stop_reason": call.get("stop_reason"),
                "error": error.get("message") if isinstance(error, dict) else None,
                "input_tokens": _tokens(usage, "input_tokens", "prompt_tokens"),
                "output_tokens": _tokens(usage, "output_tokens", "completion_tokens"),
                "seconds": round(float(call.get("duration", 0.0)), 3),
                "tools": list(call.get("tools", [])),
            }
        )
    return rows


def _tokens(usage: dict[str, Any], *names: str) -> int:
    for name in names:
        value = usage.get(name)
        if isinstance(value, int):
            return value
    return 0
