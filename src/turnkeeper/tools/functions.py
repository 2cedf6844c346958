"""Python functions as tools."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..wire import ToolResult, ToolSpec, ToolUse

ToolFunction = Callable[..., Any]


class ToolRefused(Exception):
    """A tool declined its input; the message goes back to the model as an error result."""


@dataclass(frozen=True, slots=True)
class Tool:
    """A Python function offered to the model under `spec`; called with the tool input."""

    spec: ToolSpec
    function: Callable[[dict[str, Any]], Awaitable[str] | str]


class FunctionToolset:
    """Python functions as one toolset; a raising or slow function becomes an `is_error` result."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            if t.spec.name in self._tools:
                raise ConfigError(f"two tools are named {t.spec.name!r}")
            self._tools[t.spec.name] = t

    async def list_tools(self) -> Sequence[ToolSpec]:
        return [t.spec for t in self._tools.values()]

    async def call(self, use: ToolUse, timeout: float) -> ToolResult:
        tool = self._tools.get(use.name)
        if tool is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return ToolResult(use.id, f"unknown tool {use.name!r}; available: {known}", True)
        if not isinstance(use.input, dict):
            return ToolResult(use.id, "tool input must be a JSON object", True)
        try:
            async with asyncio.timeout(timeout):
                result = tool.function(use.input)
                if inspect.isawaitable(result):
                    result = await result
        except ToolRefused as e:
            return ToolResult(use.id, str(e), True)
        except TimeoutError:
            return ToolResult(use.id, f"{use.name} did not finish within {timeout:.1f} s", True)
        return ToolResult(use.id, str(result))
