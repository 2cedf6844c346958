"""`turnkeeper run --mcp-stdio/--mcp-http`: a real server's tools in a scripted turn."""

from __future__ import annotations

import json
import shlex
import socket
import sys
from pathlib import Path

import pytest

from tests.scripts import answer, asks, tool_use
from turnkeeper.cli import main

TIME_SERVER = shlex.join([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])


def script(tmp_path: Path, *responses: dict[str, object]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(list(responses)), encoding="utf-8")
    return str(path)


def test_run_offers_the_tools_of_an_mcp_server_over_stdio(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responses = script(
        tmp_path,
        asks(tool_use("get_current_time", {"timezone": "Asia/Tokyo"}, id="toolu_t")),
        answer("It is evening in Tokyo."),
    )
    trace = tmp_path / "trace.json"
    argv = ["run", "--script", responses, "--mcp-stdio", TIME_SERVER, "--trace", str(trace)]
    code = main([*argv, "--root", str(tmp_path), "what time is it in Tokyo?"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "It is evening in Tokyo." in out
    history = json.loads(trace.read_text(encoding="utf-8"))["history"]
    [block] = history[2]["content"]
    assert block["tool_use_id"] == "toolu_t"
    assert json.loads(block["content"])["timezone"] == "Asia/Tokyo"
    assert "+09:00" in json.loads(block["content"])["datetime"]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.parametrize(
    "option",
    [
        ["--mcp-stdio", "no-such-mcp-server"],
        ["--mcp-stdio", f"{shlex.quote(sys.executable)} -c pass"],
        ["--mcp-http", f"http://127.0.0.1:{closed_port()}/mcp"],
        ["--mcp-http", "not-a-url"],
    ],
)
def test_a_server_that_cannot_start_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str]
) -> None:
    responses = script(tmp_path, answer("never asked"))
    code = main(["run", "--script", responses, *option, "q"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith("turnkeeper: error: ")
    assert "MCP server" in line
