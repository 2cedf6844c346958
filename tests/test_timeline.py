"""`turnkeeper trace show` of a stored turn and of a trace file: rows, growth, captions, cost."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.databases import fresh_schema
from tests.models import GatedModel
from tests.scripts import answer, asks, tool_use, usage
from tests.test_loop import Clock, quiet_hooks
from turnkeeper import Budget, LocalHooks, Outcome, ScriptedProvider, TurnSetting, run_turn
from turnkeeper.cli import main
from turnkeeper.service.job import TurnJob
from turnkeeper.store import new_token, open_store
from turnkeeper.store.records import ModelCall
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.turn.trace import write_trace
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


async def stored_turn(url: str, responses: list[Any] | None = None) -> str:
    """A turn run by its job in the store at `url` (the `read_file` tool, and `responses`,
    `script()` by default): its id."""
    store = await open_store(url)
    try:
        conversation_id = await store.create_conversation(new_token()[1])
        turn = await store.create_turn(conversation_id, "todo?")
        tools = FunctionToolset([Tool(ToolSpec("read_file", "Read."), slow_read)])
        model = ScriptedProvider(script() if responses is None else responses)
        await TurnJob(store, model, tools, reporter=lambda r: None).run(turn.turn_id)
        return turn.turn_id
    finally:
        await store.close()


def test_trace_show_reads_a_stored_multi_iteration_turn(
    store_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LC_ALL", "en_US.UTF-8")
    turn_id = asyncio.run(stored_turn(store_url))
    assert main(["trace", "show", turn_id, "--database", store_url, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    rows = shown["iterations"]
    assert [r["input_tokens"] for r in rows] == [1_000, 1_600, 2_400]
    assert [r["stop_reason"] for r in rows] == ["tool_use", "tool_use", "end_turn"]
    assert [r["tools"] for r in rows] == [["read_file"], ["read_file"], []]
    assert [r["activity"] for r in rows] == ["activity.read_file"] * 2 + [None]
    assert [r["tool_seconds"] > 0 for r in rows] == [True, True, False], "tool rounds timed"
    # 5000 in * $3 + 300 out * $15 per million
    assert shown["totals"]["cost_usd"] == pytest.approx(0.0195)
    assert main(["trace", "show", turn_id, "--database", store_url]) == 0
    table = capsys.readouterr().out.splitlines()
    assert len(table) == 5, "a header, three calls, the totals"
    assert "+600" in table[2], "the growth of input tokens"
    assert "+800" in table[3]
    assert "Read a file" in table[1]
    assert "outcome: finished" in table[-1]
    assert "0.0195" in table[-1]


async def created(url: str) -> None:
    """An empty store at `url`."""
    store = await open_store(url)
    await store.close()


def test_trace_show_of_an_unknown_turn_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    asyncio.run(created(url))
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
    assert [r["activity"] for r in shown["iterations"]] == ["activity.read_file"] * 2 + [None]
    assert shown["totals"]["cost_usd"] == pytest.approx(0.0195)


def test_a_summarised_record_gives_the_same_row() -> None:
    from turnkeeper.cli import timeline

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
    assert row.activity == "activity.read_file"
    assert (row.input_tokens, row.cost_usd, row.seconds) == (1_600, 0.0063, 0.25)
    assert timeline.totals([row, replace(row, cost_usd=None)]).cost_usd is None
    assert row.tool_seconds == 0.0, "a record from before tool times were kept"


def test_the_totals_hold_the_model_calls_time_and_the_tools_time() -> None:
    """The turn's wall time, in its two parts: as a trace records it and as the store
    keeps it."""
    from turnkeeper.cli import timeline

    recorded = ModelCall(1, 0.0, 60.0, 1.5, response={}, tools_duration=0.75)
    stored = {"iteration": 2, "seconds": 2.0, "tools_seconds": 0.25, "input_tokens": 0}
    totals = timeline.totals([*timeline.rows([recorded]), *timeline.stored_rows([stored])])
    assert (totals.seconds, totals.tool_seconds) == (3.5, 1.0)


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
    turn_id = asyncio.run(stored_turn(store_url, cached_script()))
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


# ---- what `trace show` says of calls that did not answer, and of what it does not know -------

HELD = 0.05
"""Seconds a test holds a model call in flight, so that what it ran is measurable."""
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def shown(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[list[str], dict[str, Any]]:
    """`trace show` of `argv`: the table's lines and the `--json` document."""
    assert main(["trace", "show", *argv]) == 0
    table = capsys.readouterr().out.splitlines()
    assert main(["trace", "show", *argv, "--json"]) == 0
    return table, json.loads(capsys.readouterr().out)


CELLS = {"stop": (5, 33), "+in": (42, 49), "seconds": (73, 81), "cost": (91, 100)}
"""Where `timeline.render` puts a line's columns (the activity follows them, to its tools)."""


def cell(line: str, name: str) -> str:
    """One column of a table line, as printed."""
    if name == "activity":
        return line[102:124].strip()
    start, end = CELLS[name]
    return line[start:end].strip()


async def stopped_trace(path: Path) -> None:
    """The trace of a turn a stop ended during its only call, which had run 0.3 s."""
    clock = Clock()
    hooks = LocalHooks(reporter=lambda r: None)
    model = GatedModel([answer("never shown")])
    running = asyncio.create_task(
        run_turn("q", provider=model, hooks=hooks, setting=TurnSetting(clock=clock))
    )
    await model.started.wait()
    clock.t += 0.3
    hooks.stop()
    write_trace((await running).trace, path)


def test_a_stopped_call_shows_stopped_and_the_seconds_it_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "stopped.json"
    asyncio.run(stopped_trace(path))
    table, document = shown([str(path)], capsys)
    assert cell(table[1], "stop") == "stopped"
    assert float(cell(table[1], "seconds")) == 0.3
    assert document["iterations"][0]["stopped"] is True


async def stored_and_held(url: str, end: str) -> str:
    """A stored turn whose only call is held `HELD` seconds, then ended: by a stop (`stop`),
    or by the job's task being cancelled (`cancel`, the process stopping)."""
    store = await open_store(url)
    try:
        conversation_id = await store.create_conversation(new_token()[1])
        turn = await store.create_turn(conversation_id, "q")
        model = GatedModel([answer("never shown")])
        running = asyncio.create_task(
            TurnJob(store, model, reporter=lambda r: None).run(turn.turn_id)
        )
        await model.started.wait()
        await asyncio.sleep(HELD)  # the call runs a measurable while: what is measured
        if end == "stop":
            await store.request_cancel(turn.turn_id)
            await running
        else:
            running.cancel()
            with pytest.raises(asyncio.CancelledError):
                await running
        return turn.turn_id
    finally:
        await store.close()


def test_a_stored_stopped_call_shows_stopped_and_the_seconds_it_ran(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    turn_id = asyncio.run(stored_and_held(store_url, "stop"))
    table, document = shown([turn_id, "--database", store_url], capsys)
    assert cell(table[1], "stop") == "stopped"
    assert float(cell(table[1], "seconds")) >= HELD
    assert document["iterations"][0]["stopped"] is True
    assert "outcome: stopped" in table[-1]


def test_a_call_cut_short_shows_so_and_the_seconds_it_ran(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job's task is cancelled during the call (the process stopping): the call never
    answered, and ran until then."""
    turn_id = asyncio.run(stored_and_held(store_url, "cancel"))
    table, document = shown([turn_id, "--database", store_url], capsys)
    assert cell(table[1], "stop") == "cut short"
    assert float(cell(table[1], "seconds")) >= HELD
    assert document["iterations"][0]["seconds"] >= HELD


class Overrunning(GatedModel):
    """Takes 0.3 s on the turn's clock, then ignores its timeout."""

    def __init__(self, clock: Clock) -> None:
        super().__init__([])
        self.clock = clock

    async def complete(self, history: Any, tools: Any, timeout: float, on_text: Any = None) -> Any:
        self.clock.t += 0.3
        await asyncio.Event().wait()


def test_a_call_the_deadline_cut_off_shows_its_error_and_the_seconds_it_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def overrun() -> None:
        clock = Clock()
        budget = Budget(deadline=HELD, margin=0, min_call=0)
        result = await run_turn(
            "q",
            provider=Overrunning(clock),
            budget=budget,
            hooks=quiet_hooks(),
            setting=TurnSetting(clock=clock),
        )
        assert result.outcome is Outcome.TIME_LIMIT
        write_trace(result.trace, path)

    path = tmp_path / "overrun.json"
    asyncio.run(overrun())
    table, document = shown([str(path)], capsys)
    assert cell(table[1], "stop") == "error: ProviderUnavailable"
    assert float(cell(table[1], "seconds")) == 0.3
    assert document["iterations"][0]["error_type"] == "ProviderUnavailable"


def test_a_failed_call_shows_its_error_type_and_no_growth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([asks(tool_use("read_file", {"path": "todo.txt"})), OVERLOADED]))
    trace = tmp_path / "trace.json"
    assert (
        main(["run", "--script", str(script), "--root", str(tmp_path), "--trace", str(trace), "q"])
        == 1  # the turn failed: `run` says so
    )
    capsys.readouterr()
    table, document = shown([str(trace)], capsys)
    assert cell(table[2], "stop") == "error: ProviderUnavailable"
    assert cell(table[2], "+in") == "", "an unanswered call's input has no growth to show"
    row = document["iterations"][1]
    assert (row["error_type"], row["error"]) == (
        "ProviderUnavailable",
        "overloaded_error: Overloaded",
    )


def test_a_stored_failed_call_shows_its_error_type(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    turn_id = asyncio.run(stored_turn(store_url, [asks(tool_use("read_file")), OVERLOADED]))
    table, document = shown([turn_id, "--database", store_url], capsys)
    assert cell(table[2], "stop") == "error: ProviderUnavailable"
    assert document["iterations"][1]["error_type"] == "ProviderUnavailable"


def test_the_caption_is_in_the_readers_language_once_on_the_call_that_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "todo.txt").write_text("write tests")
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script()))
    trace = tmp_path / "trace.json"
    argv = ["run", "--script", str(path), "--root", str(tmp_path), "--trace", str(trace), "q"]
    assert main(argv) == 0
    capsys.readouterr()
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    monkeypatch.setenv("LC_ALL", "es_ES.UTF-8")
    table, document = shown([str(trace)], capsys)
    assert [cell(line, "activity") for line in table[1:4]] == ["Leyó un archivo"] * 2 + [""]
    assert "activity." not in "\n".join(table)
    assert [r["activity"] for r in document["iterations"]] == ["activity.read_file"] * 2 + [None]
    monkeypatch.setenv("LC_ALL", "en_US.UTF-8")
    table, _ = shown([str(trace)], capsys)
    assert "Read a file" in table[1]
    recorded = json.loads(trace.read_text())
    recorded["calls"][0]["caption"] = "activity.get_weather"  # an application's own caption
    trace.write_text(json.dumps(recorded))
    table, _ = shown([str(trace)], capsys)
    assert cell(table[1], "activity") == "activity.get_weather", "shown as its key, not blank"


def test_a_stored_turns_caption_is_shown_once_on_the_call_that_asked(
    store_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    turn_id = asyncio.run(stored_turn(store_url))
    monkeypatch.setenv("LC_ALL", "es_ES.UTF-8")
    table, document = shown([turn_id, "--database", store_url], capsys)
    assert [cell(line, "activity") for line in table[1:4]] == ["Leyó un archivo"] * 2 + [""]
    assert [r["activity"] for r in document["iterations"]] == ["activity.read_file"] * 2 + [None]


def test_unknown_prices_make_the_total_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No call of the turn has a known price (the model is unknown): the total is not 0."""
    path = tmp_path / "stopped.json"
    asyncio.run(stopped_trace(path))
    table, document = shown([str(path)], capsys)
    assert cell(table[1], "cost") == "?"
    assert cell(table[-1], "cost") == "?"
    assert document["totals"]["cost_usd"] is None


def test_trace_show_of_a_turn_id_creates_no_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TURNKEEPER_DATABASE_URL", raising=False)
    assert main(["trace", "show", "t_0123abcd"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "turnkeeper.db" in err
    missing = tmp_path / "elsewhere.db"
    assert main(["trace", "show", "t_0123abcd", "--database", f"sqlite:///{missing}"]) == 2
    assert str(missing) in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [], "no database file was created"


def test_trace_show_changes_no_database_it_reads(
    postgres_database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty database gets no tables; one older than this turnkeeper is not migrated:
    each is one line, exit 2."""
    argv = ["trace", "show", "t_0123abcd", "--database"]
    with fresh_schema(postgres_database) as empty:
        assert main([*argv, empty]) == 2
        assert "there is no turnkeeper store at" in capsys.readouterr().err
        with psycopg.connect(empty) as pg:
            tables = pg.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
            ).fetchone()
        assert tables == (0,), "reading made no tables"
    older = tmp_path / "older.db"
    with closing(sqlite3.connect(older)) as db, db:
        db.execute(
            "CREATE TABLE turnkeeper_migrations (number INTEGER PRIMARY KEY,"
            " name TEXT NOT NULL, applied REAL NOT NULL)"
        )
        db.execute("INSERT INTO turnkeeper_migrations VALUES (1, 'first', 0)")
    assert main([*argv, f"sqlite:///{older}"]) == 2
    err = capsys.readouterr().err
    assert "older than this turnkeeper" in err
    assert len(err.strip().splitlines()) == 1
    with closing(sqlite3.connect(older)) as db:
        assert db.execute("SELECT count(*) FROM turnkeeper_migrations").fetchone() == (1,)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("delete",), "not made WAL"


def test_trace_show_resolves_an_apps_captions_with_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "todo.txt").write_text("write tests")
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script()))
    trace = tmp_path / "trace.json"
    argv = ["run", "--script", str(path), "--root", str(tmp_path), "--trace", str(trace), "q"]
    assert main(argv) == 0
    recorded = json.loads(trace.read_text())
    recorded["calls"][0]["caption"] = "activity.my_orders"  # the orders app's own caption
    trace.write_text(json.dumps(recorded))
    capsys.readouterr()
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    monkeypatch.setenv("LC_ALL", "en_US.UTF-8")
    table, _ = shown([str(trace)], capsys)
    assert cell(table[1], "activity") == "activity.my_orders"
    assert "--app APP resolves them" in table[-1], "the raw key says how to resolve it"
    apps = str(Path(__file__).resolve().parent / "apps")
    table, document = shown([str(trace), "--app", "orders:assistant", "--app-dir", apps], capsys)
    assert cell(table[1], "activity") == "Looked up your orders"
    assert "--app" not in table[-1]
    assert document["iterations"][0]["activity"] == "activity.my_orders", "JSON keeps the key"
    monkeypatch.setenv("LC_ALL", "es_ES.UTF-8")
    table, _ = shown([str(trace), "--app", "orders:assistant", "--app-dir", apps], capsys)
    assert cell(table[1], "activity") == "Consultó tus pedidos"
    monkeypatch.setenv("LC_ALL", "fr_FR.UTF-8")
    table, _ = shown([str(trace), "--app", "orders:assistant", "--app-dir", apps], capsys)
    assert cell(table[1], "activity").startswith("A consulté vos"), "the app's own locale"
