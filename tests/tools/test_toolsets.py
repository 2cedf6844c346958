"""Several toolsets as one: routing by name, clashes, unknown names, the connection lifecycle."""

from __future__ import annotations

from types import TracebackType

import pytest

from turnkeeper.errors import ConfigError
from turnkeeper.tools import CombinedToolset, NoTools
from turnkeeper.tools.functions import FunctionToolset, tool
from turnkeeper.wire import ToolResult, ToolUse


@tool
def north() -> str:
    return "went north"


@tool
def south() -> str:
    return "went south"


class Connected(FunctionToolset):
    """A toolset that must be entered, like an MCP server; records its lifecycle."""

    name = "the connected source"

    def __init__(self) -> None:
        super().__init__([tool(name="south")(lambda: "went south, connected")])
        self.events: list[str] = []

    async def __aenter__(self) -> Connected:
        self.events.append("enter")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.events.append("exit")


async def test_routes_each_use_to_the_source_that_offers_it() -> None:
    toolset = CombinedToolset(FunctionToolset([north]), FunctionToolset([south]))
    assert [s.name for s in await toolset.list_tools()] == ["north", "south"]
    assert await toolset.call(ToolUse("t1", "south", {}), 5) == ToolResult("t1", "went south")
    assert await toolset.call(ToolUse("t2", "north", {}), 5) == ToolResult("t2", "went north")


async def test_an_unknown_name_is_an_error_result_listing_every_source() -> None:
    toolset = CombinedToolset(FunctionToolset([north]), FunctionToolset([south]), NoTools())
    result = await toolset.call(ToolUse("t1", "west", {}), 5)
    assert result == ToolResult("t1", "unknown tool 'west'; available tools: north, south", True)


async def test_a_name_offered_twice_is_a_config_error_naming_both_sources() -> None:
    toolset = CombinedToolset(FunctionToolset([south]), Connected())
    with pytest.raises(ConfigError) as error:
        await toolset.list_tools()
    assert str(error.value) == (
        "two tool sources offer a tool named 'south': Python functions and the connected source"
    )


async def test_enters_and_leaves_the_members_that_need_it() -> None:
    connected = Connected()
    async with CombinedToolset(FunctionToolset([north]), connected) as toolset:
        assert connected.events == ["enter"]
        assert (await toolset.call(ToolUse("t", "south", {}), 5)).content == "went south, connected"
    assert connected.events == ["enter", "exit"]


async def test_no_tools_answers_every_use_as_unknown() -> None:
    assert await NoTools().list_tools() == ()
    result = await NoTools().call(ToolUse("t", "north", {}), 5)
    assert result == ToolResult("t", "unknown tool 'north'; available tools: none", True)
