"""MCP servers as toolsets, through the official `mcp` SDK.

    async with MCPToolset.stdio("python -m mcp_server_time") as time_tools:
        await run_turn(question, provider=..., toolset=time_tools)

A server's tools are offered under the server's own names (no prefix) and
listed afresh at every `list_tools()`, which the loop calls once per turn.
What the server answers becomes the tool result: an `isError` result, or a
JSON-RPC error it sends back (an unknown tool, bad arguments), is an
`is_error` result the model can act on; a call that runs out of time is one
too. A server that crashed or closed the connection raises `ToolFailed`, which
the loop reports once and answers `is_error`: the turn goes on. A server that
cannot be reached when the tools are listed offers no tools that turn (a
warning is logged). A server that cannot start is a `ConfigError`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shlex
import sys
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from ..credentials import keep_header_secrets, keep_url_secrets, redact_text
from ..errors import ConfigError, MissingExtra
from ..wire import ToolResult, ToolSpec, ToolUse
from . import ToolFailed, unknown_tool

try:
    import mcp_types
    from mcp import Client, StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client  # the SDK's timeouts, our headers
    from mcp.shared.exceptions import MCPError
except ImportError as e:  # pragma: no cover - depends on the installed extras
    raise MissingExtra("MCP servers", "mcp") from e

logger = logging.getLogger("turnkeeper")

CONNECT_TIMEOUT = 30.0
"""Seconds a server has to start and answer the handshake."""
MAX_PAGES = 100
"""Pages of `tools/list` read at most, so a server that paginates forever cannot hang a turn."""


class MCPToolset:
    """The tools of one MCP server; an async context manager that holds the connection."""

    def __init__(
        self,
        server: StdioServerParameters | str,
        *,
        name: str | None = None,
        headers: Mapping[str, str] | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        self.server = server
        self.name = name or _describe(server)
        self.headers = dict(headers or {})
        keep_header_secrets(self.headers.items())  # a server's error may echo them
        if isinstance(server, str):
            keep_url_secrets(server)
        self.connect_timeout = connect_timeout
        self._client: Client | None = None
        self._holder: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._names: set[str] = set()

    @classmethod
    def stdio(
        cls,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        name: str | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> MCPToolset:
        """A server started as `command` (a shell-like string or an argv list), over stdio."""
        try:
            argv = shlex.split(command) if isinstance(command, str) else list(command)
        except ValueError as e:
            raise ConfigError(f"the MCP server command {command!r} cannot be split: {e}") from e
        if not argv:
            raise ConfigError("the MCP server command is empty")
        params = StdioServerParameters(
            command=argv[0], args=argv[1:], env=dict(env) if env else None, cwd=cwd
        )
        return cls(params, name=name, connect_timeout=connect_timeout)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> MCPToolset:
        """A server at `url` over streamable HTTP."""
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"the MCP server URL {url!r} must start with http:// or https://")
        return cls(url, name=name, headers=headers, connect_timeout=connect_timeout)

    # ---- the connection ---------------------------------------------------
    #
    # The SDK's transports run a task group in the task that enters them; when
    # the transport fails (an HTTP server that dies), that group cancels the
    # task it lives in. So the connection lives in a task of its own: a crash
    # ends that task and fails the calls in flight, never the turn's task.

    async def __aenter__(self) -> MCPToolset:
        if self._holder is not None:
            raise ConfigError(f"MCP server {self.name} is already connected")
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._holder = asyncio.create_task(self._hold(ready), name=f"MCP server {self.name}")
        try:
            self._client = await asyncio.wait_for(asyncio.shield(ready), self.connect_timeout)
        except BaseException as e:
            await self._release()
            if isinstance(e, TimeoutError):
                raise ConfigError(
                    f"MCP server {self.name} did not answer within {self.connect_timeout:g} s"
                ) from None
            if isinstance(e, Exception):
                raise ConfigError(f"MCP server {self.name} could not start: {_why(e)}") from e
            raise
        return self

    async def _hold(self, ready: asyncio.Future[Client]) -> None:
        """Connect, hand the client over through `ready`, and hold the connection until closing."""
        try:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(self._new_client(stack))
                ready.set_result(client)
                await self._closing.wait()
        except Exception as e:
            if not ready.done():
                ready.set_exception(e)
            else:
                logger.warning("MCP server %s: the connection ended: %s", self.name, _why(e))
        finally:
            if not ready.done():
                ready.cancel()

    def _new_client(self, stack: AsyncExitStack) -> Client:
        if isinstance(self.server, str):
            http = create_mcp_http_client(headers=self.headers or None)
            stack.push_async_callback(http.aclose)
            return Client(streamable_http_client(self.server, http_client=http), cache=None)
        return Client(stdio_client(self.server, errlog=_server_stderr()), cache=None)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._release()

    async def _release(self) -> None:
        """Close the connection (or stop connecting) and wait for its task to end."""
        holder, connected = self._holder, self._client is not None
        self._holder, self._client = None, None
        if holder is None:
            return
        self._closing.set()
        if not connected:
            holder.cancel()
        # Not `await holder`: that would take the holder's cancellation for our own.
        await asyncio.wait([holder])

    @property
    def client(self) -> Client:
        if self._client is None:
            raise ConfigError(f"MCP server {self.name} is not connected: use `async with`")
        return self._client

    # ---- the toolset ------------------------------------------------------

    async def list_tools(self) -> Sequence[ToolSpec]:
        """The server's tools, fetched now; none if it cannot be reached (logged).

        A server that fails to list (it crashed, or hangs past the connect
        timeout) is connected again once, so a long-running `serve` gets it back
        on the next turn; if that fails too, the turn goes on without its tools.
        """
        self.client  # noqa: B018 (says so if the server was never connected)
        try:
            specs = await self._list()
        except Exception as e:
            logger.warning("MCP server %s could not list its tools: %s", self.name, _why(e))
            specs = await self._reconnected_list()
        self._names = {s.name for s in specs}
        return specs

    async def _list(self) -> list[ToolSpec]:
        specs: list[ToolSpec] = []
        cursor: str | None = None
        async with asyncio.timeout(self.connect_timeout):
            for _ in range(MAX_PAGES):
                page = await self.client.list_tools(cursor=cursor)
                specs.extend(_spec(t) for t in page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
        return specs

    async def _reconnected_list(self) -> list[ToolSpec]:
        try:
            await self._release()
            await self.__aenter__()
            return await self._list()
        except Exception as e:
            logger.warning("MCP server %s: no tools this turn: %s", self.name, _why(e))
            return []

    async def call(self, use: ToolUse, timeout: float) -> ToolResult:
        if use.name not in self._names:
            return unknown_tool(use, self._names)
        if not isinstance(use.input, dict):
            return ToolResult(use.id, f"invalid input for {use.name}: must be a JSON object", True)
        try:
            result = await self.client.call_tool(use.name, use.input, read_timeout_seconds=timeout)
        except MCPError as e:
            if e.code == mcp_types.CONNECTION_CLOSED:
                raise ToolFailed(f"MCP server {self.name} closed the connection") from e
            if e.code == mcp_types.REQUEST_TIMEOUT:
                return ToolResult(use.id, f"{use.name} did not finish within {timeout:.1f} s", True)
            answered = redact_text(f"{use.name}: the server answered: {e.message}")
            return ToolResult(use.id, answered, True)
        return ToolResult(use.id, result_text(result), result.is_error)


def toolsets_from(stdio: Sequence[str] = (), http: Sequence[str] = ()) -> list[MCPToolset]:
    """The servers of the command line's `--mcp-stdio COMMAND` and `--mcp-http URL` options."""
    return [MCPToolset.stdio(c) for c in stdio] + [MCPToolset.http(u) for u in http]


def _spec(tool: mcp_types.Tool) -> ToolSpec:
    return ToolSpec(tool.name, tool.description or tool.title or "", dict(tool.input_schema))


def result_text(result: mcp_types.CallToolResult) -> str:
    """A tool result's content as text: text blocks joined by newlines, the rest named."""
    parts = [_block_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts = [json.dumps(result.structured_content, ensure_ascii=False)]
    return "\n".join(parts) or "(the tool returned nothing)"


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind} {block.mime_type} not shown]"
    if kind == "resource_link":
        return f"[resource {block.uri}]"
    resource = getattr(block, "resource", None)
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return text
    return f"[{kind or 'content'} not shown]"


def _server_stderr() -> TextIO:
    """Where a stdio server's stderr goes: ours, or the process's own when ours is no file."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__ or sys.stderr
    return sys.stderr


def _describe(server: StdioServerParameters | str) -> str:
    if isinstance(server, str):
        return server
    return shlex.join([server.command, *server.args])


def _why(e: BaseException) -> str:
    """The first leaf of an exception group, as `Kind: message`."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    if isinstance(e, MCPError) and e.code == mcp_types.CONNECTION_CLOSED:
        return "the connection closed"
    if isinstance(e, OSError) and e.strerror:
        return f"{e.strerror}" + (f": {e.filename}" if e.filename else "")
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
