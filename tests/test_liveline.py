"""The live line of `turnkeeper run`: on a terminal only, in the reader's language."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from tests.scripts import answer, asks, tool_use
from turnkeeper.cli.progress import CLEAR, LiveLine

REPO = Path(__file__).resolve().parents[1]


def todo(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    root.mkdir()
    (root / "todo.txt").write_text("write tests", encoding="utf-8")
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [asks(tool_use("read_file", {"path": "todo.txt"})), answer("your todos: write tests")]
        )
    )
    return root, script


def on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """Run the CLI with its stdout on a pseudo-terminal; everything it wrote there."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "turnkeeper", *args],
        stdout=slave,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert process.wait(timeout=60) == 0, process.stderr.read() if process.stderr else ""
    if process.stderr:
        process.stderr.close()
    return b"".join(chunks).decode("utf-8")


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG"))}
    return {**env, **extra}


def test_on_a_terminal_run_shows_the_caption_elapsed_time_and_outcome(tmp_path: Path) -> None:
    root, script = todo(tmp_path)
    shown = on_a_terminal(
        ["run", "--script", str(script), "--root", str(root), "todo?"],
        environment(LANG="es_ES.UTF-8"),
    )
    assert CLEAR in shown
    assert "Leyó un archivo · " in shown, "the caption, in the reader's language"
    assert " s" in shown.split("Leyó un archivo · ", 1)[1]
    assert "Assistant: your todos: write tests" in shown
    assert shown.rstrip().splitlines()[-1].startswith("Terminado · ")


def test_piped_or_with_json_run_prints_only_the_result(tmp_path: Path) -> None:
    root, script = todo(tmp_path)
    argv = [sys.executable, "-m", "turnkeeper", "run", "--script", str(script), "--root", str(root)]
    piped = subprocess.run(
        [*argv, "todo?"], capture_output=True, text=True, cwd=REPO, env=environment(), check=True
    )
    assert piped.stdout == "You: todo?\nAssistant: your todos: write tests\n"
    as_json = on_a_terminal(
        ["run", "--script", str(script), "--root", str(root), "--json", "todo?"], environment()
    )
    assert "\x1b" not in as_json
    assert json.loads(as_json)["status"] == "finished"


def test_the_line_redraws_in_place_with_the_elapsed_time() -> None:
    now = [10.0]
    out = io.StringIO()
    line = LiveLine(out, "en", clock=lambda: now[0])
    now[0] = 12.5
    line.update("activity.read_file")
    line.update(None)
    assert out.getvalue() == f"{CLEAR}Read a file · 2.5 s{CLEAR}Working… · 2.5 s"
    assert line.outcome("time_limit") == "Out of time · 2.5 s"


async def test_on_a_terminal_the_answer_is_printed_as_it_arrives(tmp_path: Path) -> None:
    """The first piece is on the terminal while the model is still streaming the rest
    (a gap of 0.3 s between pieces); the transcript at the end does not print it again."""
    from tests.streaming import StreamingScript
    from turnkeeper.budget import Budget
    from turnkeeper.cli.run import _printed, _turn, transcript

    out = io.StringIO()
    line = LiveLine(out, "en")
    line.asked = "todo?"
    seen: list[str] = []
    provider = StreamingScript(
        [answer("your todos: write tests")], pieces=2, gap=0.3,
        streamed=lambda piece: seen.append(out.getvalue()),
    )  # fmt: skip
    result = await _turn("todo?", provider, tmp_path, Budget(), (), line)
    first = "your todos: write tests"[:12]
    assert first not in seen[0], "nothing printed before the first piece"
    assert f"Assistant: {first}" in seen[1], "the first piece was printed before the second came"
    assert "You: todo?\n" in seen[1]
    messages = result.state.to_json()["messages"]
    assert transcript(messages, "en", _printed(result.state, line)) == ""
    assert "Assistant: your todos: write tests\n" in out.getvalue()
