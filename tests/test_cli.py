"""The CLI contract: demo, run, replay, trace show."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from tests.scripts import answer, asks, body, text, tool_use
from turnkeeper.cli import main
from turnkeeper.cli.run import exit_code, transcript
from turnkeeper.outcomes import Outcome


def write_script(path: Path, responses: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(responses), encoding="utf-8")
    return path


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "turnkeeper", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def test_demo_prints_exactly_the_answer() -> None:
    done = cli("demo")
    assert (done.returncode, done.stdout) == (0, "your todos: write tests\n")


@pytest.fixture
def todo_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    (root / "todo.txt").write_text("write tests", encoding="utf-8")
    return root


@pytest.fixture
def todo_script(tmp_path: Path) -> Path:
    return write_script(
        tmp_path / "script.json",
        [
            asks(tool_use("read_file", {"path": "todo.txt"}), say="Let me look."),
            answer("your todos: write tests"),
        ],
    )


def test_run_json_prints_the_final_published_state(
    todo_root: Path, todo_script: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--script", str(todo_script), "--root", str(todo_root), "--json", "todo?"])
    state = json.loads(capsys.readouterr().out)
    assert code == 0
    assert state["status"] == "finished"
    assert state["done"] is True
    assert [m.get("text") for m in state["messages"]] == [
        "todo?",
        "Let me look.",
        "your todos: write tests",
    ]
    assert state["usage"]["iterations"] == 2


def test_run_prints_the_conversation_in_the_readers_language(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(tmp_path / "s.json", [body([text("cut")], "max_tokens")])
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    monkeypatch.setenv("LANG", "es_ES.UTF-8")
    assert main(["run", "--script", str(script), "hola"]) == 3
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "Tú: hola",
        "Assistant: La respuesta se cortó antes de estar completa, así que no se muestra.",
    ]
    monkeypatch.setenv("LC_ALL", "en_US.UTF-8")
    assert main(["run", "--script", str(script), "hi"]) == 3
    assert "The answer was cut off" in capsys.readouterr().out


def test_the_assistants_lines_are_labelled_with_its_name() -> None:
    """As the widget labels them: the demo assistant's name under `run`, an app's its own;
    never `bot`."""
    messages = [{"role": "user", "text": "hi"}, {"role": "bot", "text": "hello"}]
    assert transcript(messages, "en") == "You: hi\nAssistant: hello"
    assert transcript(messages, "en", name="Shop helper").splitlines()[1] == "Shop helper: hello"


EXPECTED_EXITS = {
    Outcome.FINISHED: 0,
    Outcome.FAILED: 1,
    Outcome.ITERATION_LIMIT: 1,
    Outcome.TIME_LIMIT: 1,
    Outcome.STOPPED: 1,
    Outcome.LIMIT_REACHED: 1,
    Outcome.TRUNCATED: 3,
    Outcome.REFUSED: 3,
    Outcome.CONTEXT_EXCEEDED: 3,
}


def test_every_outcome_has_its_exit_status() -> None:
    """A new outcome fails here until its exit status is decided (and written in --help)."""
    assert set(EXPECTED_EXITS) == set(Outcome)
    assert {o: exit_code(o) for o in Outcome} == EXPECTED_EXITS
    assert exit_code(None) == 1, "a turn left waiting did not finish"


def test_run_help_gives_the_exit_statuses() -> None:
    done = cli("run", "--help")
    assert done.returncode == 0
    epilog = done.stdout.split("exit status:", 1)[1]
    by_code = {line.split()[0]: line for line in epilog.splitlines() if line.strip()}
    for outcome, code in EXPECTED_EXITS.items():
        assert outcome.value in by_code[str(code)]
    assert "2  unusable arguments" in epilog


@pytest.mark.parametrize(
    ("steps", "argv", "status", "code"),
    [
        ([answer("done")], [], "finished", 0),
        (
            [asks(tool_use("read_file", {"path": "x"}))] * 3,
            ["--max-iterations", "2"],
            "iteration_limit",
            1,
        ),
        ([asks(tool_use("read_file", {"path": "x"}))], [], "failed", 1),  # the script runs out
        ([body([text("cut")], "max_tokens")], [], "truncated", 3),
        ([body([], "refusal")], [], "refused", 3),
        ([body([], "model_context_window_exceeded")], [], "context_exceeded", 3),
    ],
)
def test_run_exits_with_the_status_of_the_turns_outcome(
    tmp_path: Path, steps: list[dict[str, Any]], argv: list[str], status: str, code: int
) -> None:
    """A script can tell: 0 finished, 1 failed or capped, 3 no full answer."""
    script = write_script(tmp_path / "s.json", steps)
    done = cli("run", "--script", str(script), *argv, "--json", "q")
    assert json.loads(done.stdout)["status"] == status, done.stderr
    assert done.returncode == code, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["run", "q"],
        ["run", "--script", "/nonexistent/script.json", "q"],
        ["run", "--script", "{script}", "--max-iterations", "0", "q"],
        ["run", "--script", "{script}", "--deadline", "-3", "q"],
        ["run", "--script", "{script}", "--deadline", "soon", "q"],
        ["run", "--script", "{script}", "--root", "/nonexistent/dir", "q"],
        ["run", "--script", "{script}", "  "],
        ["run", "--script", "{bad}", "q"],
        ["run", "--script", "{not_list}", "q"],
        ["run", "--script", "{no_content}", "q"],
        ["run", "--script", "{empty}", "q"],
        ["replay", "{bad}"],
        ["trace", "show", "{script}"],
        ["frobnicate"],
    ],
)
def test_unusable_arguments_exit_2_with_a_one_line_error(
    tmp_path: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    files = {
        "script": write_script(tmp_path / "ok.json", [answer("x")]),
        "bad": tmp_path / "bad.json",
        "not_list": tmp_path / "obj.json",
        "no_content": write_script(tmp_path / "nc.json", [{"stop_reason": "end_turn"}]),
        "empty": write_script(tmp_path / "empty.json", []),
    }
    files["bad"].write_text("[{", encoding="utf-8")
    files["not_list"].write_text("{}", encoding="utf-8")
    argv = [a.format(**{k: str(v) for k, v in files.items()}) for a in args]
    with pytest.raises(SystemExit) as exited:
        raise SystemExit(main(argv))
    captured = capsys.readouterr()
    assert exited.value.code == 2
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1, captured.err
    assert "Traceback" not in captured.err


@pytest.fixture
def todo_trace(todo_root: Path, todo_script: Path, tmp_path: Path) -> Path:
    """The trace of the todo turn, written by `run --trace`."""
    trace_path = tmp_path / "trace.json"
    argv = ["run", "--script", str(todo_script), "--root", str(todo_root)]
    assert main([*argv, "--trace", str(trace_path), "todo?"]) == 0
    return trace_path


def test_trace_is_written_replayed_and_shown(
    todo_trace: Path, todo_script: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_path = todo_trace
    trace = json.loads(trace_path.read_text())
    assert trace["outcome"] == "finished"
    assert [c["decision"] for c in trace["calls"]] == ["continue", "finished"]
    assert all(c["timeout"] > 0 and c["duration"] >= 0 for c in trace["calls"])
    assert trace["calls"][0]["response"] == json.loads(todo_script.read_text())[0]
    assert [m["role"] for m in trace["history"]] == ["user", "assistant", "user", "assistant"]
    capsys.readouterr()

    assert main(["replay", str(trace_path)]) == 0
    assert "matches" in capsys.readouterr().out

    assert main(["trace", "show", "--json", str(trace_path)]) == 0
    rows = json.loads(capsys.readouterr().out)["iterations"]
    assert [(r["stop_reason"], r["tools"]) for r in rows] == [
        ("tool_use", ["read_file"]),
        ("end_turn", []),
    ]
    assert main(["trace", "show", str(trace_path)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert len(table) == 4
    assert "outcome: finished" in table[-1]


def test_replay_reports_the_first_difference(
    todo_trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_path = todo_trace
    trace = json.loads(trace_path.read_text())
    trace["calls"][1]["response"]["stop_reason"] = "max_tokens"
    trace_path.write_text(json.dumps(trace))
    capsys.readouterr()
    assert main(["replay", str(trace_path)]) == 1
    assert (
        capsys.readouterr().out.strip()
        == "replay differs: call 2: recorded finished, replayed truncated"
    )


def test_a_time_limit_replays_identically(
    tmp_path: Path, todo_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(
        tmp_path / "s.json", [asks(tool_use("read_file", {"path": "todo.txt"}))] * 3
    )
    trace_path = tmp_path / "t.json"
    argv = ["run", "--script", str(script), "--root", str(todo_root), "--trace", str(trace_path)]
    assert main([*argv, "--deadline", "0.5", "q"]) == 1  # time_limit
    trace = json.loads(trace_path.read_text())
    assert trace["outcome"] == "time_limit"
    assert trace["calls"] == []
    assert main(["replay", str(trace_path)]) == 0


def test_a_reported_exit_is_one_line_on_stderr(tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [body([text("cut")], "max_tokens")])
    done = cli("run", "--script", str(script), "q")
    assert done.returncode == 3  # truncated
    assert done.stderr.splitlines() == [
        "turnkeeper: truncated: response truncated on max_tokens after 1 iteration: "
        "stop_reason 'max_tokens'"
    ]


@pytest.mark.parametrize(
    ("responses", "note"),
    [(2, "turnkeeper: note: 1 scripted response unused"), (3, "2 scripted responses unused")],
)
def test_notices_count_in_the_singular_and_the_plural(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], responses: int, note: str
) -> None:
    script = write_script(tmp_path / "s.json", [answer("x")] * responses)
    assert main(["run", "--script", str(script), "q"]) == 0
    assert note in capsys.readouterr().err


def test_an_empty_script_is_refused_as_unusable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(tmp_path / "s.json", [])
    assert main(["run", "--script", str(script), "q"]) == 2
    assert (
        capsys.readouterr().err == f"turnkeeper: error: script {script} holds no responses: "
        "the model would have no answer\n"
    )


def test_the_version_comes_from_the_package_metadata(capsys: pytest.CaptureFixture[str]) -> None:
    import turnkeeper

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert turnkeeper.__version__ == version("turnkeeper")
    assert capsys.readouterr().out == f"turnkeeper {version('turnkeeper')}\n"
