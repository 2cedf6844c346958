"""Python functions as tools.

`@tool` turns a typed function, sync or async, into a `Tool`: the JSON schema
comes from its type hints and its docstring (tools/docstrings.py), and the
model's input is validated before the function runs. `FunctionToolset` offers
tools to the model and answers every foreseeable failure as an `is_error`
result the model can act on:

- an unknown tool name, input that is not an object or does not validate;
- `ToolRefused`, raised by a tool that declines its input (its message goes back);
- a timeout: the time the turn has left, or the tool's own shorter `timeout`.

A function whose first parameter is annotated `ToolContext` receives the
turn's context there (tools/context.py); that parameter is not in the schema.
A function that returns a `Card` (cards.py) answers the model with the card's
JSON and hands the card itself on with the result, for the reader to see.

Any other exception escapes `call`, so the loop reports it exactly once
(`tool_error`) and answers `is_error`; the turn goes on. Sync functions run in
a daemon thread so they never block the event loop; one that outlives its
timeout is abandoned (Python cannot kill a thread), not waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast, overload

import pydantic
import pydantic_core

from ..cards import Card
from ..errors import ConfigError
from ..wire import ToolResult, ToolSpec, ToolUse
from . import ToolFailed, docstrings, unknown_tool
from .context import ToolContext, current
from .threads import in_thread

ToolFunction = Callable[..., Any]
Answer = str | Card
"""What a tool's function gives back once rendered: text for the model, or a card."""
MAX_PROBLEMS = 5
"""How many validation problems one error result lists."""


class ToolRefused(Exception):
    """A tool declined its input; the message goes back to the model as an error result."""


@dataclass(frozen=True, slots=True)
class Tool:
    """A Python function offered to the model under `spec`; called with the tool input."""

    spec: ToolSpec
    function: Callable[[dict[str, Any]], Awaitable[Answer] | Answer]
    timeout: float | None = None
    """At most this many seconds per call, if shorter than what the turn has left."""
    needs_approval: bool = False
    """A person approves each call before it runs: the turn waits for the decision."""
    idempotent: bool = False
    """Safe to run again: a turn resumed after a crash re-runs it if it was in flight."""
    ask: str | Mapping[str, str] | None = None
    """What a call is to do, in the imperative ("Delete a note"), as the approval card says
    it: English text, or `{locale: text}` with `en`; without it the card asks "Run {tool}?"."""
    is_async: bool = field(init=False, repr=False, compare=False)
    """Whether `function` is a coroutine function, found once (inspect is slow per call)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_async", inspect.iscoroutinefunction(self.function))


@overload
def tool(function: ToolFunction, /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    needs_approval: bool = False,
    idempotent: bool = False,
    ask: str | Mapping[str, str] | None = None,
) -> Callable[[ToolFunction], Tool]: ...


def tool(
    function: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    needs_approval: bool = False,
    idempotent: bool = False,
    ask: str | Mapping[str, str] | None = None,
) -> Tool | Callable[[ToolFunction], Tool]:
    """Make a typed function a `Tool`: `@tool` or `@tool(name=…, description=…, timeout=…)`.

    `needs_approval=True`: the turn waits for a person's yes before each call runs.
    `idempotent=True`: a turn resumed after a crash may run it again (docs/design.md §11).
    `ask="Delete a note"` (or `{locale: text}`): what the approval card says it is to do.

    Every parameter needs a type hint; its description comes from the
    docstring's `Args:` section (or `:param name:`) or from
    `Annotated[T, pydantic.Field(description=…)]`. The function returns a
    string, a `Card`, or anything pydantic can serialise to JSON.
    """

    def make(fn: ToolFunction) -> Tool:
        made = function_tool(fn, name=name, description=description, timeout=timeout)
        return dataclasses.replace(
            made, needs_approval=needs_approval, idempotent=idempotent, ask=ask
        )

    return make if function is None else make(function)


def function_tool(
    fn: ToolFunction,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Tool:
    """The `Tool` for `fn`; `ConfigError` if it cannot be offered as one."""
    tool_name = name or fn.__name__
    if timeout is not None and not timeout > 0:
        raise ConfigError(f"tool {tool_name!r}: timeout must be a positive number of seconds")
    doc = docstrings.parse(inspect.getdoc(fn))
    try:
        hints = _parameter_hints(fn)
    except (NameError, TypeError, SyntaxError) as e:
        raise ConfigError(f"tool {tool_name!r}: cannot read its type hints: {e}") from e
    parameters = list(inspect.signature(fn).parameters.values())
    takes_context = _takes_context(tool_name, parameters, hints)
    model = _input_model(tool_name, parameters[takes_context:], hints, doc.params)
    spec = ToolSpec(
        name=tool_name,
        description=description if description is not None else doc.description,
        input_schema=_schema(model),
    )
    return Tool(spec, _validating(fn, tool_name, model, takes_context), timeout)


def _takes_context(name: str, parameters: list[inspect.Parameter], hints: dict[str, Any]) -> bool:
    """Whether the first parameter is for the `ToolContext`; `ConfigError` if another is."""
    for n, p in enumerate(parameters):
        if hints.get(p.name) is ToolContext and n > 0:
            raise ConfigError(
                f"tool {name!r}: the ToolContext parameter {p.name!r} must come first"
            )
    return bool(parameters) and hints.get(parameters[0].name) is ToolContext


def _input_model(
    name: str,
    parameters: list[inspect.Parameter],
    hints: dict[str, Any],
    described: dict[str, str],
) -> type[pydantic.BaseModel]:
    """A pydantic model of the tool's input parameters, rejecting unknown fields."""
    fields: dict[str, Any] = {}
    for p in parameters:
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            raise ConfigError(f"tool {name!r}: parameter {p.name!r} must be a named parameter")
        if p.name not in hints:
            raise ConfigError(f"tool {name!r}: parameter {p.name!r} needs a type hint")
        default = ... if p.default is p.empty else p.default
        about = described.get(p.name)
        fields[p.name] = (
            hints[p.name],
            pydantic.Field(default, description=about) if about else default,
        )
    try:
        return pydantic.create_model(
            f"{name}_input", __config__=pydantic.ConfigDict(extra="forbid"), **fields
        )
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError, TypeError) as e:
        raise ConfigError(f"tool {name!r}: its parameters cannot become a schema: {e}") from e


def _parameter_hints(fn: ToolFunction) -> dict[str, Any]:
    """The parameters' type hints, evaluated; the return annotation is not needed, so not read."""
    annotations = dict(getattr(fn, "__annotations__", {}))
    annotations.pop("return", None)

    def shim() -> None: ...

    shim.__annotations__ = annotations
    globalns = getattr(inspect.unwrap(fn), "__globals__", None)
    return typing.get_type_hints(shim, globalns=globalns, include_extras=True)


def _schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The model's JSON schema without pydantic's generated titles."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return schema


def _validating(
    fn: ToolFunction, name: str, model: type[pydantic.BaseModel], takes_context: bool
) -> Callable[[dict[str, Any]], Awaitable[Answer] | Answer]:
    """`fn` called with validated keyword arguments (after the turn's context, if it takes
    one); its result rendered as text, unless it is a `Card`. `__tool_function__` is `fn`, whose
    code is part of the assistant's version (`ownership.comparable`)."""
    original = fn
    if takes_context:
        fn = _with_context(fn)
    if inspect.iscoroutinefunction(fn):

        async def run_async(args: dict[str, Any]) -> Answer:
            return _answer(await fn(**_validated(name, model, args)))

        run_async.__tool_function__ = original  # type: ignore[attr-defined]
        return run_async

    def run(args: dict[str, Any]) -> Answer:
        return _answer(fn(**_validated(name, model, args)))

    run.__tool_function__ = original  # type: ignore[attr-defined]
    return run


def _with_context(fn: ToolFunction) -> ToolFunction:
    """`fn` with the context of the turn running now as its first argument (read when it is
    called: in the tool's task, or its thread, which carries the turn's context along)."""
    if inspect.iscoroutinefunction(fn):

        async def given_async(**args: Any) -> Any:
            return await fn(current(), **args)

        return given_async

    def given(**args: Any) -> Any:
        return fn(current(), **args)

    return given


def _validated(name: str, model: type[pydantic.BaseModel], args: dict[str, Any]) -> dict[str, Any]:
    try:
        value = model.model_validate(args)
    except pydantic.ValidationError as e:
        raise ToolRefused(invalid_input(name, e)) from None
    return {field: getattr(value, field) for field in type(value).model_fields}


def invalid_input(name: str, error: pydantic.ValidationError) -> str:
    """A short account of what is wrong with the input, one problem per field."""
    problems = [
        f"{'.'.join(str(part) for part in e['loc']) or 'input'}: {e['msg']}"
        for e in error.errors(include_url=False)
    ]
    more = len(problems) - MAX_PROBLEMS
    text = "; ".join(problems[:MAX_PROBLEMS]) + (f"; and {more} more" if more > 0 else "")
    return f"invalid input for {name}: {text}"


def _answer(value: Any) -> Answer:
    """A card as it is (the toolset gives the model its JSON), anything else `rendered`."""
    return value if isinstance(value, Card) else rendered(value)


def rendered(value: Any) -> str:
    """A tool's return value as the text the model reads: strings as they are, the rest as JSON."""
    if isinstance(value, str):
        return value
    return pydantic_core.to_json(value).decode("utf-8")


UNBOUNDED = contextlib.nullcontext()
"""No timer of our own: the loop already bounds every tool call."""


class FunctionToolset:
    """Python functions as one toolset; see the module docstring for how failures are answered."""

    name = "Python functions"

    def __init__(self, tools: Iterable[Tool | ToolFunction]) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            t = t if isinstance(t, Tool) else function_tool(t)
            if t.spec.name in self._tools:
                raise ConfigError(f"two tools are named {t.spec.name!r}")
            self._tools[t.spec.name] = t

    async def list_tools(self) -> Sequence[ToolSpec]:
        return self.specs()

    def specs(self) -> list[ToolSpec]:
        """The tools' specs, known without connecting to anything."""
        return [t.spec for t in self._tools.values()]

    def tools(self) -> list[Tool]:
        """The tools, in order, with their flags."""
        return list(self._tools.values())

    async def call(self, use: ToolUse, timeout: float) -> ToolResult:
        tool = self._tools.get(use.name)
        if tool is None:
            return unknown_tool(use, self._tools)
        if not isinstance(use.input, dict):
            return ToolResult(use.id, f"invalid input for {use.name}: must be a JSON object", True)
        # The loop bounds every tool call by `timeout`; a second timer here is only
        # worth its cost when the tool's own limit is tighter.
        limit = tool.timeout if tool.timeout is not None and tool.timeout < timeout else None
        scope = asyncio.timeout(limit) if limit is not None else None
        try:
            async with scope or UNBOUNDED:
                answer = await _invoke(tool, use.input)
        except ToolRefused as e:
            return ToolResult(use.id, str(e) or f"{use.name} declined this input", True)
        except TimeoutError as e:
            if scope is None or not scope.expired():
                # The tool's own TimeoutError is a failure to report, not our deadline.
                raise ToolFailed(f"{use.name} raised TimeoutError: {e}") from e
            return ToolResult(use.id, f"{use.name} did not finish within {limit:.1f} s", True)
        if isinstance(answer, Card):
            return ToolResult(use.id, rendered(answer.to_json()), card=answer)
        return ToolResult(use.id, answer)


async def _invoke(tool: Tool, args: dict[str, Any]) -> Answer:
    if tool.is_async:
        result = await cast(Awaitable[Any], tool.function(args))
    else:
        result = await in_thread(tool.function, args)
        if inspect.isawaitable(result):
            result = await result
    return result if isinstance(result, str | Card) else str(result)
