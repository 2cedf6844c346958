"""`turnkeeper trace show` of a stored turn and of a trace file: rows, growth, captions, cost."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.scripts import answer, asks, tool_use, usage
from turnkeeper import ScriptedProvider
from turnkeeper.cli import main
from turnkeeper.job import TurnJob
from turnkeeper.records import ModelCall
from turnkeeper.store import new_token, open_store
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.wire import ToolSpec

SONNET = "claude-sonnet-4-5"


def script() -> list[dict[str, object]]:
    """Three calls whose input grows by what each step appended."""
    calls = []
    for input_tokens in (1_000, 1_600, 2_400):
        call = asks(tool_use("read_file", {"path": "todo.txt"}))
        call.update(model=SONNET, usage=usage(input_tokens, 100))
        calls.append(call)
    calls[-1] = answer("write tests", model=SONNET, usage=usage(2_400, 100))
    return calls


def slow_read(arguments: dict[str, Any]) -> str:
    """The tool, taking a measurable moment (the timeline shows the tools' time)."""
    time.sleep(0.01)
    return "write tests"


async def stored_turn(url: str) -> str:
    store = await open_store(url)
    try:
        conversation_id = await store.create_conversation(new_token()[1])
        turn = await store.create_turn(conversation_id, "todo?")
        tools = FunctionToolset([Tool(ToolSpec("read_file", "Read."), slow_read)])
        job = TurnJob(store, ScriptedProvider(script()), tools, reporter=lambda r: None)
        await job.run(turn.turn_id)
        return turn.turn_id
    finally:
        await store.close()


def test_trace_show_reads_a_stored_multi_iteration_turn(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    turn_id = asyncio.run(stored_turn(store_url))
    assert main(["trace", "show", turn_id, "--database", store_url, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    rows = shown["iterations"]
    assert [r["input_tokens"] for r in rows] == [1_000, 1_600, 2_400]
    assert [r["stop_reason"] for r in rows] == ["tool_use", "tool_use", "end_turn"]
    assert [r["tools"] for r in rows] == [["read_file"], ["read_file"], []]
    assert [r["activity"] for r in rows] == ["activity.read_file"] * 3
    assert [r["tool_seconds"] > 0 for r in rows] == [True, True, False], "tool rounds timed"
    # 5000 in * $3 + 300 out * $15 per million
    assert shown["totals"]["cost_usd"] == pytest.approx(0.0195)
    assert main(["trace", "show", turn_id, "--database", store_url]) == 0
    table = capsys.readouterr().out.splitlines()
    assert len(table) == 5, "a header, three calls, the totals"
    assert "+600" in table[2], "the growth of input tokens"
    assert "+800" in table[3]
    assert "activity.read_file" in table[1]
    assert "outcome: finished" in table[-1]
    assert "0.0195" in table[-1]


def test_trace_show_of_an_unknown_turn_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    assert main(["trace", "show", "t_0123abcd", "--database", url]) == 2
    assert "has no turn t_0123abcd" in capsys.readouterr().err
    assert main(["trace", "show", "no-such-file.json", "--database", url]) == 2
    assert "neither a trace file nor a turn id" in capsys.readouterr().err


def test_trace_show_of_a_file_has_captions_and_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "todo.txt").write_text("write tests")
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script()))
    trace = tmp_path / "trace.json"
    argv = ["run", "--script", str(path), "--root", str(tmp_path), "--trace", str(trace), "q"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["trace", "show", "--json", str(trace)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [r["activity"] for r in shown["iterations"]] == ["activity.read_file"] * 3
    assert shown["totals"]["cost_usd"] == pytest.approx(0.0195)


def test_a_summarised_record_gives_the_same_row() -> None:
    from turnkeeper import timeline

    summary = {
        "iteration": 2,
        "stop_reason": "tool_use",
        "error": None,
        "input_tokens": 1_600,
        "output_tokens": 100,
        "seconds": 0.25,
        "tools": ["read_file"],
        "caption": "activity.read_file",
        "cost_usd": 0.0063,
    }
    [row] = timeline.stored_rows([summary])
    assert row["activity"] == "activity.read_file"
    assert (row["input_tokens"], row["cost_usd"], row["seconds"]) == (1_600, 0.0063, 0.25)
    assert timeline.totals([row, {**row, "cost_usd": None}])["cost_usd"] is None
    assert row["tool_seconds"] == 0.0, "a record from before tool times were kept"


def test_the_totals_hold_the_model_calls_time_and_the_tools_time() -> None:
    """The turn's wall time, in its two parts: as a trace records it and as the store
    keeps it."""
    from turnkeeper import timeline

    recorded = ModelCall(1, 0.0, 60.0, 1.5, response={}, tools_duration=0.75)
    stored = {"iteration": 2, "seconds": 2.0, "tools_seconds": 0.25, "input_tokens": 0}
    totals = timeline.totals([*timeline.rows([recorded]), *timeline.stored_rows([stored])])
    assert (totals["seconds"], totals["tool_seconds"]) == (3.5, 1.0)


def cached_script() -> list[dict[str, object]]:
    """Three calls of a cached turn: the prefix written, then each call reads the last one's
    prompt and writes what was added since."""
    calls = []
    for written, read in ((6_000, 0), (400, 6_010), (400, 6_410)):
        call = asks(tool_use("read_file", {"path": "todo.txt"}))
        cached = {"cache_creation_input_tokens": written, "cache_read_input_tokens": read}
        call.update(model=SONNET, usage=usage(10, 100) | cached)
        calls.append(call)
    calls[-1] = answer("write tests", model=SONNET, usage=calls[-1]["usage"])
    return calls


def test_trace_show_has_the_prompt_caches_tokens_per_call_and_in_all(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async def stored() -> str:
        store = await open_store(store_url)
        try:
            conversation_id = await store.create_conversation(new_token()[1])
            turn = await store.create_turn(conversation_id, "todo?")
            tools = FunctionToolset([Tool(ToolSpec("read_file", "Read."), slow_read)])
            job = TurnJob(store, ScriptedProvider(cached_script()), tools, reporter=lambda r: None)
            await job.run(turn.turn_id)
            return turn.turn_id
        finally:
            await store.close()

    turn_id = asyncio.run(stored())
    assert main(["trace", "show", turn_id, "--database", store_url, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    rows, totals = shown["iterations"], shown["totals"]
    assert [r["input_tokens"] for r in rows] == [6_010, 6_420, 6_820], "every token sent"
    assert [r["cache_creation_input_tokens"] for r in rows] == [6_000, 400, 400]
    assert [r["cache_read_input_tokens"] for r in rows] == [0, 6_010, 6_410]
    assert (totals["cache_creation_input_tokens"], totals["cache_read_input_tokens"]) == (
        6_800,
        12_420,
    )
    # 30 in * $3 + 300 out * $15 + 6800 written * $3.75 + 12420 read * $0.30 per million
    assert totals["cost_usd"] == pytest.approx((90 + 4_500 + 25_500 + 3_726) / 1e6)
    assert main(["trace", "show", turn_id, "--database", store_url]) == 0
    table = capsys.readouterr().out.splitlines()
    assert "cache w cache r" in table[0]
    assert table[2].split()[2:7] == ["6420", "+410", "400", "6010", "100"]
    assert table[-1].split()[3:7] == ["19250", "6800", "12420", "300"]
