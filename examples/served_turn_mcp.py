"""A served turn whose tools come from an MCP server (mcp-server-time, over stdio).

    python examples/served_turn_mcp.py          # offline: a scripted model asks the time server
    python examples/served_turn_mcp.py --real   # the model chosen from the environment

It starts `turnkeeper serve` in this process (SQLite in a temporary folder, a
free port), asks one question over the HTTP API as a web page would, polls the
published state until it is done, then stops the server with SIGINT, the way
Ctrl-C does.

Needs the server and mcp extras and the time server, from turnkeeper's checkout:

    .venv/bin/pip install -e '.[server,mcp]' mcp-server-time

Without them it says so in one line (exit 2).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import socket
import sys
import tempfile
import urllib.request
from typing import Any

from turnkeeper import Assistant, ScriptedProvider
from turnkeeper.errors import MissingExtra
from turnkeeper.providers import Provider

try:
    from turnkeeper.serving.server import serve
    from turnkeeper.serving.settings import Settings
    from turnkeeper.tools.mcp import MCPToolset
except MissingExtra as e:
    print(
        f"served_turn_mcp.py needs the {e.extra} extra (and server, mcp-server-time): "
        ".venv/bin/pip install -e '.[server,mcp]' mcp-server-time",
        file=sys.stderr,
    )
    raise SystemExit(2) from None

NEEDS = ".venv/bin/pip install -e '.[server,mcp]' mcp-server-time"

TIME_SERVER = f"{sys.executable} -m mcp_server_time --local-timezone UTC"
QUESTION = "What time is it in Tokyo?"

assistant = Assistant(
    name="Time desk",
    instructions="You tell the time anywhere, using the time server's tools.",
    tools=[MCPToolset.stdio(TIME_SERVER)],
)


def response(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    return {
        "id": "msg_example",
        "type": "message",
        "role": "assistant",
        "model": "scripted",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 10},
    }


SCRIPT = [
    response(
        [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_current_time",
                "input": {"timezone": "Asia/Tokyo"},
            }
        ],
        "tool_use",
    ),
    response([{"type": "text", "text": "The time server answered for Asia/Tokyo."}], "end_turn"),
]


def call(method: str, url: str, body: Any = None, token: str | None = None) -> Any:
    """One HTTP request; the JSON answer, or None for 204."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("content-type", "application/json")
    if token:
        request.add_header("authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as answer:
        return None if answer.status == 204 else json.loads(answer.read())


async def ask(base: str) -> dict[str, Any]:
    """Open a conversation, ask, and poll until the turn is done: its final state."""
    created = await asyncio.to_thread(call, "POST", f"{base}/api/conversations")
    token = created["token"]
    turns = f"{base}/api/conversations/{created['conversation_id']}/turns"
    turn = await asyncio.to_thread(call, "POST", turns, {"text": QUESTION}, token)
    state: dict[str, Any] = {"version": 0, "done": False}
    while not state["done"]:
        url = f"{base}/api/turns/{turn['turn_id']}?after={state['version']}"
        newer = await asyncio.to_thread(call, "GET", url, None, token)
        if newer is not None:
            state = newer
            print(f"  version {state['version']}: {state['status']}, activity {state['activity']}")
        else:
            await asyncio.sleep(0.1)  # nothing newer yet: a widget polls again a moment later
    return state


async def until_up(base: str, serving: asyncio.Task[None]) -> None:
    while True:
        if serving.done():
            serving.result()  # the server could not start: say why
        try:
            await asyncio.to_thread(call, "GET", f"{base}/openapi.json")
            return
        except OSError:
            await asyncio.sleep(0.1)


async def main(provider: Provider) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(
            database=f"sqlite:///{folder}/example.db",
            port=port,
            app="served_turn_mcp:assistant",
            mcp=[TIME_SERVER],
        )
        serving = asyncio.create_task(serve(settings, assistant, provider))
        await until_up(base, serving)
        state = await ask(base)
        print(f"answer: {state['messages'][-1].get('text')}  ({state['status']})")
        signal.raise_signal(signal.SIGINT)  # what Ctrl-C does: running turns finish, then exit
        await serving


def missing() -> str | None:
    """The first module this example needs that is not installed, if any."""
    for module in ("uvicorn", "starlette", "mcp", "mcp_server_time"):
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except ImportError:
            return module
    return None


if __name__ == "__main__":
    if (absent := missing()) is not None:
        print(f"served_turn_mcp.py needs {absent}: {NEEDS}", file=sys.stderr)
        raise SystemExit(2)
    real = "--real" in sys.argv[1:]
    chosen = assistant.choose_provider(os.environ) if real else ScriptedProvider(SCRIPT)
    asyncio.run(main(chosen))
