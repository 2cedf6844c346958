"""MCP servers as tool sources: a real server from PyPI, a test server over stdio and HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.scripts import answer, asks, tool_use
from turnkeeper import i18n
from turnkeeper.budget import Budget
from turnkeeper.errors import ConfigError
from turnkeeper.outcomes import Outcome
from turnkeeper.tools import CombinedToolset
from turnkeeper.tools.functions import FunctionToolset, tool
from turnkeeper.tools.mcp import MCPToolset

from .turns import scripted_turn, tool_results

TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
TEST_SERVER = [sys.executable, str(Path(__file__).with_name("mcp_server.py"))]
STARTUP = 30.0
"""The bound on waiting for a server to start; never reached on a working machine."""


@tool
def local_note() -> str:
    """A Python tool next to the MCP ones."""
    return "noted"


async def test_a_turn_sees_the_real_answer_of_mcp_server_time() -> None:
    async with MCPToolset.stdio(TIME_SERVER) as time_tools:
        result, hooks = await scripted_turn(
            time_tools,
            asks(
                tool_use(
                    "convert_time",
                    {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
                    id="toolu_t",
                )
            ),
            answer("It is 21:00 in Tokyo."),
        )
    assert result.outcome is Outcome.FINISHED
    [block] = tool_results(result)
    assert block["tool_use_id"] == "toolu_t"
    assert "is_error" not in block
    converted = json.loads(block["content"])
    assert converted["source"]["timezone"] == "UTC"
    assert converted["target"]["timezone"] == "Asia/Tokyo"
    assert converted["target"]["datetime"].endswith("T21:00:00+09:00")
    captions = [s.activity for s in hooks.published if s.activity is not None]
    assert captions == ["activity.convert_time"]
    assert i18n.resolve(captions[0], "es") == "Convirtió una hora"
    assert hooks.reports == []


async def test_what_the_server_answers_as_errors_are_error_results_not_reports() -> None:
    async with MCPToolset.stdio(TEST_SERVER) as server:
        result, hooks = await scripted_turn(
            server,
            asks(
                tool_use("fail", {"why": "the printer is on fire"}, id="toolu_1"),
                tool_use("reject", {}, id="toolu_2"),
                tool_use("echo", {"txt": 1}, id="toolu_3"),
                tool_use("nope", {}, id="toolu_4"),
                tool_use("echo", {"text": "hi"}, id="toolu_5"),
            ),
            asks(tool_use("lists", {}, id="toolu_6")),
            answer("done"),
        )
    assert result.outcome is Outcome.FINISHED
    fail, reject, bad_input, unknown, echo = tool_results(result, 0)
    assert fail["is_error"] is True
    assert "the printer is on fire" in fail["content"]
    assert reject["is_error"] is True
    assert "reject takes no excuses" in reject["content"]
    assert bad_input["is_error"] is True
    assert "text" in bad_input["content"]
    assert unknown["is_error"] is True
    assert unknown["content"].startswith("unknown tool 'nope'; available tools: crash, echo")
    assert echo == {"type": "tool_result", "tool_use_id": "toolu_5", "content": "echo: hi"}
    [lists] = tool_results(result, 1)
    assert lists["content"] == "1", "the tools are listed once per turn, not per model call"
    assert hooks.reports == []


async def test_a_server_that_crashes_mid_turn_is_an_error_result_and_the_turn_finishes() -> None:
    toolset = CombinedToolset(FunctionToolset([local_note]), MCPToolset.stdio(TEST_SERVER))
    async with toolset:
        result, hooks = await scripted_turn(
            toolset,
            asks(tool_use("echo", {"text": "before"}, id="toolu_1")),
            asks(tool_use("crash", {}, id="toolu_2"), tool_use("local_note", {}, id="toolu_3")),
            asks(tool_use("echo", {"text": "after"}, id="toolu_4")),
            answer("the server is gone"),
        )
        listed_next_turn = [s.name for s in await toolset.list_tools()]
    assert {"local_note", "echo", "crash"} <= set(listed_next_turn), (
        "the next turn starts the crashed server again and offers its tools"
    )
    assert result.outcome is Outcome.FINISHED
    assert result.state.to_json()["messages"][-1]["text"] == "the server is gone"
    assert tool_results(result, 0)[0]["content"] == "echo: before"
    crashed, note = tool_results(result, 1)
    assert crashed["is_error"] is True
    assert "closed the connection" in crashed["content"]
    assert note["content"] == "noted"
    [after] = tool_results(result, 2)
    assert after["is_error"] is True
    assert [(r.event, r.details["tool"]) for r in hooks.reports] == [
        ("tool_error", "crash"),
        ("tool_error", "echo"),
    ]


async def test_a_call_that_never_answers_times_out_and_the_server_still_works() -> None:
    async with MCPToolset.stdio(TEST_SERVER) as server:
        result, hooks = await scripted_turn(
            server,
            asks(tool_use("hang", {}, id="toolu_1")),
            asks(tool_use("echo", {"text": "still here"}, id="toolu_2")),
            answer("ok"),
            budget=Budget(tool_timeout=0.5),
        )
    [hung] = tool_results(result, 0)
    assert hung["is_error"] is True
    assert "did not finish within" in hung["content"]
    assert tool_results(result, 1)[0]["content"] == "echo: still here"
    assert hooks.reports == []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the test MCP server exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)  # polling the port, bounded by the deadline
    raise RuntimeError(f"the test MCP server did not listen on {port} within {STARTUP} s")


@pytest.fixture
def http_server() -> Iterator[str]:
    """The test server over streamable HTTP on a free port; yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        [*TEST_SERVER, "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=STARTUP)


async def test_a_server_over_streamable_http(http_server: str) -> None:
    async with MCPToolset.http(http_server) as server:
        result, hooks = await scripted_turn(
            server,
            asks(
                tool_use("echo", {"text": "over http"}, id="toolu_1"),
                tool_use("fail", {"why": "on purpose"}, id="toolu_2"),
            ),
            answer("done"),
        )
    assert result.outcome is Outcome.FINISHED
    echo, fail = tool_results(result)
    assert echo == {"type": "tool_result", "tool_use_id": "toolu_1", "content": "echo: over http"}
    assert fail["is_error"] is True
    assert "on purpose" in fail["content"]
    assert hooks.reports == []


async def test_a_server_over_http_that_dies_mid_turn_fails_the_call_not_the_turn(
    http_server: str,
) -> None:
    async with MCPToolset.http(http_server) as server:
        result, hooks = await scripted_turn(
            server,
            asks(tool_use("crash", {}, id="toolu_1")),
            asks(tool_use("echo", {"text": "anyone?"}, id="toolu_2")),
            answer("the server is gone"),
        )
    assert result.outcome is Outcome.FINISHED
    assert result.state.to_json()["messages"][-1]["text"] == "the server is gone"
    for step in (0, 1):
        [block] = tool_results(result, step)
        assert block["is_error"] is True
        assert "closed the connection" in block["content"]
    assert [r.details["tool"] for r in hooks.reports] == ["crash", "echo"]


async def test_a_name_offered_by_two_sources_is_a_config_error() -> None:
    @tool
    def echo(text: str) -> str:
        return text

    toolset = CombinedToolset(FunctionToolset([echo]), MCPToolset.stdio(TEST_SERVER))
    async with toolset:
        with pytest.raises(ConfigError, match="two tool sources offer a tool named 'echo'"):
            await toolset.list_tools()


@pytest.mark.parametrize(
    ("server", "why"),
    [
        (MCPToolset.stdio("no-such-mcp-server --flag"), "could not start: No such file"),
        (
            MCPToolset.stdio([sys.executable, "-c", "pass"]),
            "could not start: the connection closed",
        ),
        (
            MCPToolset.stdio(
                [sys.executable, "-c", "import sys; sys.stdin.read()"], connect_timeout=0.5
            ),
            "did not answer within",
        ),
        (MCPToolset.http(f"http://127.0.0.1:{free_port()}/mcp"), "could not start"),
    ],
)
async def test_a_server_that_cannot_start_is_a_config_error(server: MCPToolset, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        async with server:
            pass


def test_bad_server_descriptions_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="command is empty"):
        MCPToolset.stdio("  ")
    with pytest.raises(ConfigError, match="cannot be split"):
        MCPToolset.stdio('python -c "unterminated')
    with pytest.raises(ConfigError, match="must start with http"):
        MCPToolset.http("127.0.0.1:8000/mcp")


async def test_a_server_used_before_connecting_says_so() -> None:
    with pytest.raises(ConfigError, match="not connected"):
        await MCPToolset.stdio(TIME_SERVER).list_tools()
