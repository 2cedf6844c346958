"""Traces replay every decision, `time_limit` included, from the recorded clock."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.scripts import asks, tool_use
from tests.test_loop import QUESTION, Clock, SlowScripted, echo_tool, quiet_hooks
from turnkeeper import Budget, ConfigError, Outcome, TurnSetting, run_turn
from turnkeeper.tools.functions import FunctionToolset
from turnkeeper.turn.replay import first_difference, replay
from turnkeeper.turn.trace import read_trace, write_trace


async def test_a_time_limit_after_some_calls_replays_from_the_recorded_clock(
    tmp_path: Path,
) -> None:
    clock = Clock()
    provider = SlowScripted([asks(tool_use("echo")) for _ in range(5)], clock, seconds=40)
    result = await run_turn(
        QUESTION,
        provider=provider,
        toolset=FunctionToolset([echo_tool([])]),
        budget=Budget(deadline=100, call_timeout=60, margin=1, min_call=5),
        hooks=quiet_hooks(),
        setting=TurnSetting(clock=clock),
    )
    assert result.outcome is Outcome.TIME_LIMIT
    path = tmp_path / "trace.json"
    write_trace(result.trace, path)
    trace = read_trace(path)
    assert [round(c.duration) for c in trace.calls] == [40, 40, 40]
    assert [c.timeout for c in trace.calls] == [60, 59, 19]

    replayed = (await replay(trace)).trace
    assert first_difference(trace, replayed) is None
    assert replayed.outcome == "time_limit"

    # with more time on the recorded clock, the replay takes another call and says so
    trace.budget = replace(trace.budget, deadline=1000)
    assert (
        first_difference(trace, (await replay(trace)).trace) == "recorded 3 model calls, replayed 4"
    )


def test_an_unreadable_trace_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"format": "turnkeeper.trace/1", "calls": []}))
    with pytest.raises(ConfigError, match="lacks"):
        read_trace(path)
    with pytest.raises(ConfigError, match="cannot read"):
        read_trace(tmp_path / "missing.json")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("calls", "x"),
        ("calls", [1]),
        ("history", None),
        ("history", 5),
        ("clock", "abc"),
        ("wire", ["anthropic"]),
        ("request", 5),
        ("calls", [{"iteration": 1, "started": 0, "timeout": 9, "duration": None}]),
        ("budget", {"deadline": "soon"}),
        ("prior", 99),
        ("question", 3),
    ],
)
def test_a_malformed_trace_is_a_config_error_not_a_crash(
    tmp_path: Path, field: str, value: object
) -> None:
    trace = {
        "format": "turnkeeper.trace/1",
        "wire": "anthropic",
        "question": "q",
        "prior": 0,
        "history": [{"role": "user", "content": "q"}],
        "calls": [],
        "clock": [0.0],
        "outcome": "stopped",
        "budget": {},
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    read_trace(path)  # the untouched trace is fine
    path.write_text(json.dumps({**trace, field: value}))
    with pytest.raises(ConfigError, match="malformed"):
        read_trace(path)
