"""Python functions as tools: schemas, validation, failures, timeouts, concurrency."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import pydantic
import pytest

from tests.scripts import answer, asks, tool_use
from turnkeeper.budget import Budget
from turnkeeper.cards import Card
from turnkeeper.errors import ConfigError
from turnkeeper.outcomes import Outcome
from turnkeeper.tools.context import ToolContext
from turnkeeper.tools.functions import FunctionToolset, Tool, ToolRefused, tool
from turnkeeper.wire import ToolResult, ToolSpec, ToolUse

from .turns import scripted_turn, tool_results

WAIT = 10.0
"""The bound on every wait for another task or thread; never reached when the code is right."""


@tool
def get_weather(city: str, days: int = 1, unit: Literal["c", "f"] = "c") -> str:
    """Forecast for a city.

    Uses the national weather service.

    Args:
        city: the city's name, e.g. "Madrid"
        days: how many days ahead,
            counting today
        unit: degrees Celsius or Fahrenheit

    Returns:
        the forecast, one line a day
    """
    return f"{city}: sunny for {days} days in {unit}"


async def call(toolset: FunctionToolset, name: str, args: Any, timeout: float = WAIT) -> ToolResult:
    return await toolset.call(ToolUse("toolu_1", name, args), timeout)


# ---- schema -----------------------------------------------------------------


def test_schema_comes_from_type_hints_and_docstring() -> None:
    spec = get_weather.spec
    assert spec.name == "get_weather"
    assert spec.description == "Forecast for a city.\n\nUses the national weather service."
    schema = spec.input_schema
    assert schema["type"] == "object"
    assert schema["required"] == ["city"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["city"] == {
        "type": "string",
        "description": 'the city\'s name, e.g. "Madrid"',
    }
    assert schema["properties"]["days"]["default"] == 1
    assert schema["properties"]["days"]["description"] == "how many days ahead, counting today"
    assert schema["properties"]["unit"]["enum"] == ["c", "f"]


def test_annotated_field_descriptions_and_decorator_options() -> None:
    @tool(name="lookup", description="Look a word up.", timeout=3)
    async def find(word: Annotated[str, pydantic.Field(description="the word")]) -> list[str]:
        return [word]

    assert find.spec.name == "lookup"
    assert find.spec.description == "Look a word up."
    assert find.spec.input_schema["properties"]["word"]["description"] == "the word"
    assert find.timeout == 3


def test_a_function_that_cannot_be_a_tool_is_a_config_error() -> None:
    def untyped(city):  # type: ignore[no-untyped-def]
        return city

    def star(*cities: str) -> str:
        return ""

    with pytest.raises(ConfigError, match="'city' needs a type hint"):
        tool(untyped)
    with pytest.raises(ConfigError, match="must be a named parameter"):
        tool(star)
    with pytest.raises(ConfigError, match="timeout must be a positive"):
        tool(timeout=0)(get_weather.function)


def test_two_tools_with_one_name_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="two tools are named 'get_weather'"):
        FunctionToolset([get_weather, get_weather])


async def test_plain_functions_are_accepted_and_their_results_rendered_as_json() -> None:
    class Point(pydantic.BaseModel):
        x: int
        y: int

    def origin() -> Point:
        return Point(x=0, y=0)

    async def nothing() -> None:
        return None

    toolset = FunctionToolset([origin, nothing])
    assert [s.name for s in await toolset.list_tools()] == ["origin", "nothing"]
    assert (await call(toolset, "origin", {})).content == '{"x":0,"y":0}'
    assert (await call(toolset, "nothing", {})) == ToolResult("toolu_1", "null")


async def test_a_card_goes_to_the_model_as_its_json_and_with_the_result_as_itself() -> None:
    """Sync or async, with the turn's context or not: the card is handed on as it is."""
    card = Card(
        "Order A-1", {"Status": "shipped", "Total": "€42"}, links=[("t", "https://t.example")]
    )

    def order(order_id: str) -> Card:
        return card

    async def order_later(ctx: ToolContext, order_id: str) -> Card:
        return card

    toolset = FunctionToolset([order, order_later])
    for name in ("order", "order_later"):
        result = await call(toolset, name, {"order_id": "A-1"})
        assert result.card == card
        assert json.loads(result.content) == card.to_json()
        assert "€42" in result.content, "the model reads the text as written, not escaped"
        assert not result.is_error
    assert (await call(toolset, "order", {})).card is None, "invalid input: no card"


# ---- validation -------------------------------------------------------------


async def test_valid_input_is_converted_and_passed() -> None:
    result = await call(FunctionToolset([get_weather]), "get_weather", {"city": "Oslo", "days": 2})
    assert result == ToolResult("toolu_1", "Oslo: sunny for 2 days in c")


@pytest.mark.parametrize(
    ("args", "problems"),
    [
        ({}, ["city: Field required"]),
        ({"city": "Oslo", "days": "many"}, ["days: Input should be a valid integer"]),
        ({"city": "Oslo", "unit": "k"}, ["unit: Input should be 'c' or 'f'"]),
        ({"city": "Oslo", "when": "now"}, ["when: Extra inputs are not permitted"]),
        ({"city": 3, "days": []}, ["city: Input should be a valid string", "days:"]),
    ],
)
async def test_invalid_input_is_an_error_result_naming_each_problem(
    args: dict[str, Any], problems: list[str]
) -> None:
    ran: list[str] = []

    @tool
    def forecast(city: str, days: int = 1, unit: Literal["c", "f"] = "c") -> str:
        ran.append(city)
        return city

    result = await call(FunctionToolset([forecast]), "forecast", args)
    assert result.is_error
    assert result.content.startswith("invalid input for forecast: ")
    for problem in problems:
        assert problem in result.content
    assert ran == []


async def test_input_that_is_not_an_object_is_an_error_result() -> None:
    result = await call(FunctionToolset([get_weather]), "get_weather", ["Oslo"])
    assert result == ToolResult(
        "toolu_1", "invalid input for get_weather: must be a JSON object", True
    )


async def test_a_refusal_goes_back_to_the_model_as_its_message() -> None:
    @tool
    def divide(a: float, b: float) -> float:
        if b == 0:
            raise ToolRefused("b must not be zero; pick another divisor")
        return a / b

    toolset = FunctionToolset([divide])
    assert (await call(toolset, "divide", {"a": 1, "b": 4})).content == "0.25"
    refused = await call(toolset, "divide", {"a": 1, "b": 0})
    assert refused == ToolResult("toolu_1", "b must not be zero; pick another divisor", True)


async def test_an_unknown_tool_is_an_error_result_listing_the_tools() -> None:
    result = await call(FunctionToolset([get_weather]), "get_wether", {"city": "Oslo"})
    assert result.is_error
    assert result.content == "unknown tool 'get_wether'; available tools: get_weather"


async def test_an_unknown_tool_in_a_turn_is_answered_and_the_turn_goes_on() -> None:
    result, hooks = await scripted_turn(
        FunctionToolset([get_weather]),
        asks(tool_use("no_such_tool", {}, id="toolu_x")),
        answer("sorry"),
    )
    assert result.outcome is Outcome.FINISHED
    [block] = tool_results(result)
    assert block["tool_use_id"] == "toolu_x"
    assert block["is_error"] is True
    assert "unknown tool 'no_such_tool'" in block["content"]
    assert hooks.reports == []


# ---- exceptions: reported once, the turn goes on ----------------------------


@tool
def explode(why: str) -> str:
    """Always fails."""
    raise ValueError(why)


@tool
async def explode_later(why: str) -> str:
    """Always fails, asynchronously."""
    await asyncio.sleep(0)
    raise KeyError(why)


@pytest.mark.parametrize("name", ["explode", "explode_later"])
async def test_an_exception_is_reported_once_and_the_turn_goes_on(name: str) -> None:
    result, hooks = await scripted_turn(
        FunctionToolset([explode, explode_later, get_weather]),
        asks(
            tool_use(name, {"why": "the disk is full"}, id="toolu_a"),
            tool_use("get_weather", {"city": "Oslo"}, id="toolu_b"),
        ),
        answer("it broke"),
    )
    assert result.outcome is Outcome.FINISHED
    assert result.state.to_json()["messages"][-1]["text"] == "it broke"
    failed, fine = tool_results(result)
    assert failed["tool_use_id"] == "toolu_a"
    assert failed["is_error"] is True
    assert "the disk is full" in failed["content"]
    assert fine == {
        "type": "tool_result",
        "tool_use_id": "toolu_b",
        "content": "Oslo: sunny for 1 days in c",
    }
    [report] = hooks.reports
    assert report.event == "tool_error"
    assert report.details["tool"] == name
    assert "the disk is full" in report.message


async def test_a_timeout_error_raised_by_the_tool_is_reported_not_taken_for_ours() -> None:
    @tool
    async def fetch(url: str) -> str:
        raise TimeoutError("the upstream server did not answer")

    result, hooks = await scripted_turn(
        FunctionToolset([fetch]),
        asks(tool_use("fetch", {"url": "http://x"}, id="toolu_f")),
        answer("no luck"),
    )
    [block] = tool_results(result)
    assert block["is_error"] is True
    assert "the upstream server did not answer" in block["content"]
    assert [r.event for r in hooks.reports] == ["tool_error"]


# ---- timeouts -----------------------------------------------------------------


async def test_a_tool_slower_than_its_own_timeout_is_an_error_result() -> None:
    never = asyncio.Event()

    @tool(timeout=0.05)
    async def stuck() -> str:
        await never.wait()
        return "unreachable"

    result = await call(FunctionToolset([stuck]), "stuck", {}, timeout=WAIT)
    assert result == ToolResult("toolu_1", "stuck did not finish within 0.1 s", True)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event a blocked sync tool waits on; set at teardown so no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


async def test_a_sync_tool_past_the_turns_time_is_abandoned_and_the_turn_goes_on(
    release: threading.Event,
) -> None:
    @tool
    def blocking() -> str:
        release.wait(WAIT)
        return "late"

    result, hooks = await scripted_turn(
        FunctionToolset([blocking]),
        asks(tool_use("blocking", {}, id="toolu_s")),
        answer("gave up"),
        budget=Budget(tool_timeout=0.05),
    )
    assert result.outcome is Outcome.FINISHED
    [block] = tool_results(result)
    assert block["is_error"] is True
    assert "blocking did not finish within" in block["content"]
    assert hooks.reports == []


async def test_a_tools_timeout_is_bounded_by_what_the_turn_has_left() -> None:
    seen: list[float] = []

    class Recording(FunctionToolset):
        async def call(self, use: ToolUse, timeout: float) -> ToolResult:
            seen.append(timeout)
            return await super().call(use, timeout)

    await scripted_turn(
        Recording([get_weather]),
        asks(tool_use("get_weather", {"city": "Oslo"})),
        answer("ok"),
        budget=Budget(deadline=30, margin=1, tool_timeout=60),
    )
    [timeout] = seen
    assert 0 < timeout <= 29


# ---- concurrency and order --------------------------------------------------


async def test_tool_uses_of_one_response_run_concurrently_results_in_use_order() -> None:
    started = {"first": asyncio.Event(), "second": asyncio.Event()}
    second_done = asyncio.Event()

    async def meet(me: str, other: str) -> str:
        started[me].set()
        try:
            await asyncio.wait_for(started[other].wait(), WAIT)
        except TimeoutError:
            return f"{me} ran alone"
        return f"{me} met {other}"

    @tool
    async def first() -> str:
        met = await meet("first", "second")
        await asyncio.wait_for(second_done.wait(), WAIT)  # finish last
        return met

    @tool
    async def second() -> str:
        met = await meet("second", "first")
        second_done.set()
        return met

    result, _ = await scripted_turn(
        FunctionToolset([first, second]),
        asks(tool_use("first", id="toolu_1"), tool_use("second", id="toolu_2")),
        answer("both"),
    )
    answers = [m for m in result.history if m["role"] == "user"][1:]
    assert len(answers) == 1, "all results go back in one user message"
    assert [(b["tool_use_id"], b["content"]) for b in tool_results(result)] == [
        ("toolu_1", "first met second"),
        ("toolu_2", "second met first"),
    ]


async def test_a_sync_tool_runs_in_a_thread_without_blocking_the_event_loop() -> None:
    go = threading.Event()

    @tool
    def waits_for_go() -> str:
        return "released" if go.wait(WAIT) else "blocked"

    @tool
    async def says_go() -> str:
        go.set()
        return "said go"

    result, _ = await scripted_turn(
        FunctionToolset([waits_for_go, says_go]),
        asks(tool_use("waits_for_go", id="toolu_w"), tool_use("says_go", id="toolu_g")),
        answer("done"),
    )
    assert [b["content"] for b in tool_results(result)] == ["released", "said go"]


async def test_a_tool_built_by_hand_still_works() -> None:
    spec = ToolSpec("echo", "Echo the input.")
    toolset = FunctionToolset([Tool(spec, lambda args: json.dumps(args))])
    assert (await call(toolset, "echo", {"a": 1})).content == '{"a": 1}'
