"""Tools: Python functions and MCP servers behind one interface.

The loop asks a `Toolset` for its tools once per turn and calls them by name;
a toolset answers every call with a `ToolResult` (errors included, with
`is_error`), so a failing tool never fails the turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..wire import ToolResult, ToolSpec, ToolUse


class Toolset(Protocol):
    """A source of tools."""

    async def list_tools(self) -> Sequence[ToolSpec]:
        """The tools to offer the model; fetched once per turn."""
        ...

    async def call(self, use: ToolUse, timeout: float) -> ToolResult:
        """Run one tool use within `timeout` seconds."""
        ...


class NoTools:
    """The empty toolset."""

    async def list_tools(self) -> Sequence[ToolSpec]:
        return ()

    async def call(self, use: ToolUse, timeout: float) -> ToolResult:
        return ToolResult(use.id, f"unknown tool {use.name!r}: no tools are available", True)
