"""A small MCP server for the tests, built on the official SDK.

python mcp_server.py               serve over stdio
python mcp_server.py --http PORT   serve over streamable HTTP on 127.0.0.1:PORT
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError


class CountingServer(MCPServer):
    """Counts the `tools/list` requests it answers."""

    lists = 0

    async def list_tools(self) -> Any:
        CountingServer.lists += 1
        return await super().list_tools()


server = CountingServer("turnkeeper-test")


@server.tool()
def echo(text: str) -> str:
    """Say `text` back."""
    return f"echo: {text}"


@server.tool()
def lists() -> str:
    """How many times the tools were listed on this server."""
    return str(CountingServer.lists)


@server.tool()
def fail(why: str) -> str:
    """Fail the way a tool expects to: an isError result."""
    raise ToolError(why)


@server.tool()
def reject() -> str:
    """Answer with a JSON-RPC error instead of a result."""
    raise MCPError(code=-32602, message="reject takes no excuses")


@server.tool()
def crash() -> str:
    """Die mid-call."""
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answer."""
    await asyncio.Event().wait()
    return "unreachable"


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[-1]))
    else:
        server.run()
