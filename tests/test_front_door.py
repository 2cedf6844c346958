"""The front door: what a newcomer pastes from the README runs as pasted from the clone,
the first command serves whichever model the environment selects, and each example says
what it needs, a missing extra in one line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.test_cli_extras import HIDE
from tests.test_server import free_port, turnkeeper, until_answers
from turnkeeper.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text("utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
EXTRAS = PYPROJECT["project"]["optional-dependencies"]
BLOCKS = re.findall(r"```sh\n(.*?)```", README, re.S)
WHAT = "turnkeeper runs LLM agent turns the way production needs them run"


def lines(block: str) -> list[str]:
    """A shell block's commands, continuation lines joined."""
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def block_with(needle: str) -> str:
    found: list[str] = [block for block in BLOCKS if needle in block]
    assert len(found) == 1, needle
    return found[0]


def test_the_server_extra_installs_every_sdk_serve_can_select() -> None:
    """With ANTHROPIC_API_KEY (or OPENAI_BASE_URL) exported, `serve` selects that SDK: the
    README's first command installs `.[server]` and must find it there."""
    names = {re.split(r"[<>=\[ ]", requirement)[0] for requirement in EXTRAS["server"]}
    assert {"anthropic", "openai"} <= names


def test_the_readme_says_what_turnkeeper_is_before_its_commands() -> None:
    before = README.split("```", 1)[0]
    assert WHAT in before


def test_help_says_what_turnkeeper_is(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert WHAT in " ".join(capsys.readouterr().out.split())


def test_run_help_shows_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    for default in ("(default: 10)", "(default: 180)", "(default: .)"):
        assert default in said


def test_every_extra_is_listed() -> None:
    listed = README.split("every extra is", 1)[1].split("\n\n", 1)[0]
    for extra in EXTRAS:
        assert f"`{extra}`" in listed, extra


def test_every_command_runs_from_the_clone_without_an_activated_venv() -> None:
    bare = [
        line
        for block in BLOCKS
        for line in lines(block)
        if re.match(r"(turnkeeper|pip3?|python|python3 (?!-m venv))\b", line.strip())
    ]
    assert bare == []
    assert ". .venv/bin/activate" in README, "the README says once how to drop .venv/bin/"


def test_the_scripts_the_readme_runs_ship() -> None:
    named = re.findall(r"--script (\S+)", "\n".join(BLOCKS))
    assert named
    for name in named:
        assert (ROOT / name).is_file(), name


def test_the_command_line_block_runs_as_pasted(tmp_path: Path) -> None:
    """In a folder laid out like the clone: `.venv/bin/turnkeeper`, `examples/`, `src/`."""
    bin_folder = tmp_path / ".venv" / "bin"
    bin_folder.mkdir(parents=True)
    (bin_folder / "turnkeeper").write_text(f'#!/bin/sh\nexec {sys.executable} -m turnkeeper "$@"\n')
    (bin_folder / "turnkeeper").chmod(0o755)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    todo = tmp_path / "src" / "turnkeeper" / "demo_files"
    todo.mkdir(parents=True)
    (todo / "todo.txt").write_text("write tests")
    block = block_with(".venv/bin/turnkeeper demo")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "your todos: write tests" in done.stdout
    assert "replay matches" in done.stdout


def test_the_library_snippet_runs_as_pasted_from_the_clone() -> None:
    [snippet] = [b for b in re.findall(r"```python\n(.*?)```", README, re.S) if "asyncio.run" in b]
    done = subprocess.run(
        [sys.executable, "-c", snippet + "\nprint(result.outcome.value, result.state.done)"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["finished", "True"]


def test_the_curl_block_runs_as_pasted(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    block = block_with("curl").replace("localhost:8000", f"127.0.0.1:{port}")
    log = tmp_path / "serve.log"
    database = f"sqlite:///{tmp_path / 'tk.db'}"
    with turnkeeper("serve", "--port", str(port), "--database", database, log=log) as server:
        until_answers(f"{base}/openapi.json", server, log)
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block], capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 0, done.stderr
    state = json.loads(done.stdout.strip().splitlines()[-1])
    assert state["turn_id"].startswith("t_")
    assert state["messages"][0]["text"] == "what's on my todo list?"


@pytest.mark.parametrize(
    ("example", "hidden", "extra"),
    [
        ("served_turn_mcp.py", ["mcp"], "mcp"),
        ("served_turn_mcp.py", ["uvicorn", "starlette"], "server"),
        ("shop/shop.py", ["starlette"], "server"),
    ],
)
def test_an_example_without_its_extra_says_so_in_one_line(
    example: str, hidden: list[str], extra: str
) -> None:
    script = HIDE.replace(
        "from turnkeeper.cli import main\nsys.exit(main(sys.argv[2:]))",
        "import runpy\nrunpy.run_path(sys.argv[2], run_name='__main__')",
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    done = subprocess.run(
        [sys.executable, "-c", script, ",".join(hidden), str(ROOT / "examples" / example)],
        capture_output=True,
        text=True,
        timeout=60,
        env=environ,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    [extras] = re.findall(r"pip install -e '\.\[([a-z,]+)\]'", done.stderr)
    assert extra in extras.split(",")


EXAMPLES = sorted(
    p.relative_to(ROOT / "examples")
    for p in (ROOT / "examples").rglob("*.*")
    if not {"node_modules", "dist"} & set(p.parts)  # the React app's packages and build
)


@pytest.mark.parametrize("example", EXAMPLES)
def test_each_example_says_what_it_needs(example: Path) -> None:
    if example.suffix not in (".py", ".sh"):
        return
    header = (ROOT / "examples" / example).read_text("utf-8")[:1500]
    assert "Needs" in header, example
    assert example.as_posix() in block_with("examples/library_turn.py")
