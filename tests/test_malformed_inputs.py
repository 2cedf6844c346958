"""Malformed scripts and traces: the CLI refuses each with one line and exit code 2.

Whatever a file holds (JSON nested too deeply, an integer too long to convert,
a content block or a model call of the wrong shape, a budget that cannot be
one), `run --script`, `replay` and `trace show` say what is wrong with which
file, on one line of stderr, and exit 2: never a traceback, never a turn that
runs and fails on it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.scripts import answer, body, text, tool_use
from turnkeeper.cli import main

DEEP = "[" * 1000 + "]" * 1000
HUGE = "9" * 5000


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line the CLI printed on refusing `argv` with exit code 2."""
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    assert (code, captured.out) == (2, ""), captured.err
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("turnkeeper: error: "), lines[0]
    return lines[0]


@pytest.fixture
def trace(tmp_path: Path) -> dict[str, Any]:
    """A good trace, as `run --trace` writes it: one call that answered."""
    script = tmp_path / "good.json"
    script.write_text(json.dumps([answer("x")]), encoding="utf-8")
    path = tmp_path / "good-trace.json"
    assert main(["run", "--script", str(script), "--trace", str(path), "q"]) == 0
    recorded: dict[str, Any] = json.loads(path.read_text("utf-8"))
    assert main(["replay", str(path)]) == 0
    return recorded


def command(name: str, path: Path) -> list[str]:
    return {
        "run": ["run", "--script", str(path), "q"],
        "replay": ["replay", str(path)],
        "show": ["trace", "show", str(path)],
    }[name]


@pytest.mark.parametrize("name", ["run", "replay", "show"])
def test_json_nested_too_deeply_is_refused(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.json"
    path.write_text(DEEP, encoding="utf-8")
    line = refused(command(name, path), capsys)
    assert str(path) in line
    assert line.endswith("is nested too deeply"), line


@pytest.mark.parametrize("name", ["run", "replay", "show"])
def test_an_integer_too_long_to_read_is_refused(
    tmp_path: Path,
    name: str,
    trace: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "huge.json"
    if name == "run":
        good = json.dumps([answer("x", usage={"input_tokens": 7})])
        path.write_text(good.replace('"input_tokens": 7', f'"input_tokens": {HUGE}'), "utf-8")
    else:
        trace["calls"][0]["iteration"] = 7
        good = json.dumps(trace)
        path.write_text(good.replace('"iteration": 7', f'"iteration": {HUGE}'), "utf-8")
    line = refused(command(name, path), capsys)
    assert str(path) in line
    assert line.endswith("holds a number of more than 300 digits"), line


@pytest.mark.parametrize("name", ["run", "replay", "show"])
@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("1e400", "it holds a number too large for a float: 1e400"),
        ("NaN", "it holds NaN, which is not a JSON number"),
        ('"\\ud800"', "it holds \\ud800, half of a surrogate pair, which is not text"),
    ],
)
def test_what_turnkeeper_cannot_compute_with_or_print_is_refused(
    tmp_path: Path,
    name: str,
    value: str,
    why: str,
    trace: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """JSON that Python reads but turnkeeper could not price, time or print."""
    path = tmp_path / "odd.json"
    good = json.dumps([answer("x")] if name == "run" else trace)
    path.write_text(good.replace('"x"', value, 1), "utf-8")
    line = refused(command(name, path), capsys)
    assert str(path) in line
    assert line.endswith(why), line


@pytest.mark.parametrize(
    ("block", "why"),
    [
        ({"type": "text", "text": 5}, "'text' must be a string"),
        ({"type": "text"}, "'text' must be a string"),
        ({**tool_use("read_file"), "id": 5}, "'id' must be a string"),
        ({**tool_use("read_file"), "name": None}, "'name' must be a string"),
        ({**tool_use("read_file"), "input": "todo.txt"}, "'input' must be an object"),
        (
            {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": []},
            "'input' must be an object",
        ),
        ({"type": 3}, "it has no 'type'"),
        ("hello", "it is not an object"),
    ],
)
def test_a_content_block_of_the_wrong_shape_makes_the_script_unusable(
    tmp_path: Path, block: Any, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps([answer("fine"), body([text("ok"), block], "end_turn")]), "utf-8")
    line = refused(command("run", path), capsys)
    assert line.startswith(f"turnkeeper: error: {path} is not a usable script: "), line
    assert line.endswith(f"response 2, content block 2: {why}"), line


def test_a_response_of_the_wrong_shape_makes_the_script_unusable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps([answer("fine"), 5]), "utf-8")
    line = refused(command("run", path), capsys)
    assert line == f"turnkeeper: error: {path} is not a usable script: response 2 is not an object"


def test_blocks_of_every_shape_the_api_sends_still_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Unknown block types pass through; a tool use with an empty input is fine."""
    thinking = {"type": "thinking", "thinking": "hm", "signature": "x"}
    search = {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}}
    path = tmp_path / "s.json"
    path.write_text(json.dumps([body([thinking, search, text("done")], "end_turn")]), "utf-8")
    assert main(["run", "--script", str(path), "q"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "Assistant: done"


@pytest.mark.parametrize("name", ["replay", "show"])
@pytest.mark.parametrize(
    ("calls", "why"),
    [
        ([{"response": 5}], "call 1: iteration must be a whole number"),
        ([5], "calls must be a list of objects"),
        ("calls", "calls must be a list of objects"),
        ("response=5", "call 1: response must be an object"),
        ("error=boom", "call 1: error must be an object with a kind and a message"),
        ("tools=5", "call 1: tools must be a list of names"),
        ("duration=x", "call 1: duration must be a number"),
        ("stop_reason=5", "call 1: stop_reason must be text"),
    ],
)
def test_a_trace_with_calls_of_the_wrong_shape_is_refused(
    tmp_path: Path,
    trace: dict[str, Any],
    name: str,
    calls: Any,
    why: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if isinstance(calls, str) and "=" in calls:  # the recorded call with one field replaced
        field, value = calls.split("=")
        calls = [{**trace["calls"][0], field: int(value) if value.isdigit() else value}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({**trace, "calls": calls}), "utf-8")
    line = refused(command(name, path), capsys)
    assert line == f"turnkeeper: error: trace {path} is malformed: {why}"


@pytest.mark.parametrize("name", ["replay", "show"])
@pytest.mark.parametrize(
    ("budget", "why"),
    [
        ({"deadline": "soon"}, "budget: deadline must be a number, got 'soon'"),
        ({"deadline": -3}, "budget: deadline must be a positive number of seconds, got -3"),
        ({"max_iterations": [1]}, "budget: max_iterations must be a number, got [1]"),
        ({"max_iterations": 0}, "budget: max_iterations must be at least 1, got 0"),
        ({"speed": 1}, "budget: speed is not a budget setting"),
        ([], "budget must be an object"),
    ],
)
def test_a_trace_with_a_budget_that_cannot_be_one_is_refused(
    tmp_path: Path,
    trace: dict[str, Any],
    name: str,
    budget: Any,
    why: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({**trace, "budget": budget}), "utf-8")
    line = refused(command(name, path), capsys)
    assert line.startswith(f"turnkeeper: error: trace {path} is malformed: "), line
    assert line.endswith(why), line
