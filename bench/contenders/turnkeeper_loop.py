"""turnkeeper's `run_turn` over a fake provider that returns the fake model's bodies.

The provider does what an SDK adapter does after the HTTP call: it reads the
body with the Messages API wire functions (`parse_reply`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, cast

from turnkeeper import Budget, LocalHooks, Outcome, run_turn
from turnkeeper.providers import Provider, messages_api
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.turn.hooks import Hooks
from turnkeeper.wire import Message, Reply, ToolResult, ToolSpec

from .. import fake


class FakeProvider:
    """The fake model behind turnkeeper's `Provider` protocol, as a provider that does not
    stream: its `complete` takes no `on_text` (see `as_provider`)."""

    wire = messages_api.WIRE

    def __init__(self, spec: fake.Spec) -> None:
        self.spec = spec
        self.bodies = fake.script(spec)

    async def complete(
        self, history: Sequence[Message], tools: Sequence[ToolSpec], timeout: float
    ) -> Reply:
        await fake.called(self.spec)
        return messages_api.parse_reply(self.bodies[fake.step_of(len(history))])

    def user_message(self, text: str) -> Message:
        return messages_api.user_message(text)

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        return messages_api.tool_results(results)

    def describe(self) -> dict[str, Any]:
        return {"provider": "bench-fake"}


def as_provider(model: FakeProvider) -> Provider:
    """`model` as the loop's `Provider`. Its `complete` has no `on_text` on purpose: the loop
    sees that (`takes_text`) and calls it without, the non-streaming path workload A
    measures (RESULTS.md); with `on_text` every call would take the streaming one. The loop
    accepts such a provider, but the `Provider` protocol names `on_text`, so the type is
    asserted here, where the provider is made, never inside a timed turn."""
    return cast(Provider, model)


def toolset(spec: fake.Spec, *, sync: bool = False) -> FunctionToolset:
    """The trivial tool as an async function, or (`sync=True`) as a plain one run in a thread."""
    lookup = fake.tool(spec)
    result = "x" * spec.payload

    async def call(arguments: dict[str, Any]) -> str:
        return await lookup(**arguments)

    def call_sync(arguments: dict[str, Any]) -> str:
        return result

    spec_ = ToolSpec(fake.TOOL_NAME, fake.TOOL_DESCRIPTION, fake.TOOL_SCHEMA)
    return FunctionToolset([Tool(spec_, call_sync if sync else call)])


def quiet(report: Any) -> None:
    """The no-op reporter."""


class NullHooks:
    """Hooks that keep nothing: a turn with no store and nobody watching."""

    async def should_stop(self) -> bool:
        return False

    async def wait_stop(self) -> None:
        await asyncio.Event().wait()  # nobody ever stops it

    async def record_usage(self, usage: Any) -> None:
        pass

    def limit_reached(self) -> str | None:
        return None

    async def started(self, state: Any) -> None:
        pass

    async def checkpoint(self, checkpoint: Any) -> None:
        pass

    async def events(self, batch: Any) -> None:
        pass

    async def finish(self, final: Any) -> None:
        pass

    async def wait(self, checkpoint: Any, record: Any) -> None:
        pass  # no tool of the bench's waits for approval

    def report(self, report: Any) -> None:
        pass


def make(spec: fake.Spec, *, hooks: type[Hooks] | None = None, sync: bool = False) -> fake.Turn:
    provider = as_provider(FakeProvider(spec))
    tools = toolset(spec, sync=sync)
    budget = Budget(max_iterations=spec.calls, deadline=3600.0, call_timeout=600.0)

    async def turn() -> Outcome:
        result = await run_turn(
            "go",
            provider=provider,
            toolset=tools,
            budget=budget,
            hooks=hooks() if hooks else LocalHooks(reporter=quiet),
        )
        assert result.outcome is Outcome.FINISHED, result.outcome
        return result.outcome

    return turn
