"""Tools: Python functions and MCP servers behind one interface.

The loop asks a `Toolset` for its tools once per turn and calls them by name.
A toolset answers what it can foresee as a `ToolResult` with `is_error` (an
unknown name, bad input, a refusal, a timeout, an error the tool's server
sent back), so the model can act on it. Anything else, a bug in a tool or a
server that died, escapes `call` as an exception: the loop reports it once
(event `tool_error`) and answers `is_error`, so it is seen and the turn goes on.

    Toolset                   the protocol: list_tools(), call(use, timeout)
    ├── NoTools               the empty toolset
    ├── FunctionToolset       Python functions (tools/functions.py, `@tool`)
    ├── MCPToolset            one MCP server over stdio or HTTP (tools/mcp.py)
    └── CombinedToolset       several toolsets as one; a name offered twice is
                              a `ConfigError`

Imports only the ground floor (`turnkeeper.errors`, `wire`, `cards`): a tool
knows its context and its result, not the loop that calls it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Protocol

from ..errors import ConfigError, TurnError
from ..wire import ToolResult, ToolSpec, ToolUse


class Toolset(Protocol):
    """A source of tools."""

    async def list_tools(self) -> Sequence[ToolSpec]:
        """The tools to offer the model; fetched once per turn."""
        ...

    async def call(self, use: ToolUse, timeout: float) -> ToolResult:
        """Run one tool use. The loop bounds the call by `timeout` seconds; a toolset
        uses it to bound its own work (an MCP request, a tool's tighter limit)."""
        ...


class ToolFailed(TurnError):
    """A tool or its server failed in a way its toolset cannot answer for; the loop reports it."""


def unknown_tool(use: ToolUse, known: Collection[str]) -> ToolResult:
    """The answer to a tool use naming no offered tool: what is available instead."""
    available = ", ".join(sorted(known)) or "none"
    return ToolResult(use.id, f"unknown tool {use.name!r}; available tools: {available}", True)


class NoTools:
    """The empty toolset."""

    async def list_tools(self) -> Sequence[ToolSpec]:
        """No tools."""
        return ()

    async def call(self, use: ToolUse, timeout: float) -> ToolResult:
        """Every use names an unknown tool: an `is_error` result saying none is available."""
        return unknown_tool(use, ())


class CombinedToolset:
    """Several toolsets offered as one, each tool under its own name.

    A name offered by two sources is a `ConfigError` when the tools are listed
    (MCP tools keep their server's names, so a clash cannot be renamed away).
    Used as an async context manager, it enters and leaves every member that is
    one: `async with CombinedToolset(functions, MCPToolset.stdio(...)) as tools:`.
    """

    def __init__(self, *toolsets: Toolset) -> None:
        self.toolsets = toolsets
        self._routes: dict[str, Toolset] | None = None
        self._stack: AsyncExitStack | None = None

    async def __aenter__(self) -> CombinedToolset:
        async with AsyncExitStack() as stack:
            for toolset in self.toolsets:
                enter = getattr(toolset, "__aenter__", None)
                if enter is not None:
                    await stack.enter_async_context(toolset)  # type: ignore[arg-type]
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.__aexit__(exc_type, exc, tb)

    async def list_tools(self) -> Sequence[ToolSpec]:
        """Every member's tools, in the members' order; `ConfigError` if two offer one name."""
        listed = await asyncio.gather(*(t.list_tools() for t in self.toolsets))
        routes: dict[str, Toolset] = {}
        specs: list[ToolSpec] = []
        for toolset, tools in zip(self.toolsets, listed, strict=True):
            for spec in tools:
                if spec.name in routes:
                    raise ConfigError(
                        f"two tool sources offer a tool named {spec.name!r}: "
                        f"{source_name(routes[spec.name])} and {source_name(toolset)}"
                    )
                routes[spec.name] = toolset
                specs.append(spec)
        self._routes = routes
        return specs

    async def call(self, use: ToolUse, timeout: float) -> ToolResult:
        """Route the use to the member that offered its tool (listing them first if need be); an
        unknown name gets an `is_error` result naming the tools there are."""
        if self._routes is None:
            await self.list_tools()
        assert self._routes is not None
        toolset = self._routes.get(use.name)
        if toolset is None:
            return unknown_tool(use, self._routes)
        return await toolset.call(use, timeout)


def source_name(toolset: Toolset) -> str:
    """How an error message names a tool source."""
    name = getattr(toolset, "name", None)
    return str(name) if name else type(toolset).__name__
