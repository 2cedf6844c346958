"""turnkeeper's `run_turn` over the shipped `ScriptedProvider` (one per turn)."""

from __future__ import annotations

from turnkeeper import Budget, LocalHooks, Outcome, ScriptedProvider, run_turn

from .. import fake
from .turnkeeper_loop import quiet, toolset


def make(spec: fake.Spec) -> fake.Turn:
    bodies = fake.script(spec)
    tools = toolset(spec)
    budget = Budget(max_iterations=spec.calls, deadline=3600.0, call_timeout=600.0)

    async def turn() -> Outcome:
        provider = ScriptedProvider(bodies, delay=spec.delay)
        result = await run_turn(
            "go", provider=provider, toolset=tools, budget=budget, hooks=LocalHooks(quiet)
        )
        assert result.outcome is Outcome.FINISHED, result.outcome
        return result.outcome

    return turn
