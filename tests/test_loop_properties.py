"""Invariants of the loop over random sequences of responses (hypothesis)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.scripts import assert_valid_history, body, server_tool_use, text, tool_use
from turnkeeper import Budget, LocalHooks, Outcome, ScriptedProvider, run_turn
from turnkeeper.outcomes import ending
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.turn.replay import first_difference, replay
from turnkeeper.wire import ToolSpec

words = st.sampled_from(["", " ", "\n", "ok", "the answer", "  spaced  "])
tool_names = st.sampled_from(["echo", "boom", "missing"])


@st.composite
def client_uses(draw: st.DrawFn) -> list[dict[str, Any]]:
    return [
        tool_use(draw(tool_names), {"say": draw(words)}) for _ in range(draw(st.integers(1, 3)))
    ]


@st.composite
def responses(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            [
                "tool_use",
                "server_only",
                "pause_turn",
                "compaction",
                "end_turn",
                "stop_sequence",
                "max_tokens",
                "refusal",
                "model_context_window_exceeded",
                "unknown",
                "missing",
                "empty",
                "error",
            ]
        )
    )
    say = [text(draw(words))] if draw(st.booleans()) else []
    if kind == "tool_use":
        return body(say + draw(client_uses()), "tool_use")
    if kind == "server_only":
        return body([server_tool_use("web_search"), *say], "tool_use")
    if kind == "compaction":
        return body([{"type": "compaction", "content": "summary"}], "compaction")
    if kind == "max_tokens" and draw(st.booleans()):
        return body(say + draw(client_uses()), "max_tokens")
    if kind == "empty":
        return body([], draw(st.sampled_from(["end_turn", "pause_turn", "tool_use"])))
    if kind == "error":
        return {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    stop = {"unknown": "brand_new_reason", "missing": None}.get(kind, kind)
    return body(say or [text("x")], stop)


def toolset() -> FunctionToolset:
    def boom(args: dict[str, Any]) -> str:
        raise RuntimeError("boom")

    return FunctionToolset(
        [
            Tool(ToolSpec("echo", ""), lambda args: f"echo {args.get('say')}"),
            Tool(ToolSpec("boom", ""), boom),
        ]
    )


class StopAt(LocalHooks):
    def __init__(self, check: int | None) -> None:
        super().__init__(reporter=lambda report: None)
        self.check = check
        self.checks = 0

    async def should_stop(self) -> bool:
        self.checks += 1
        return self.checks == self.check


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=st.lists(responses(), max_size=8),
    max_iterations=st.integers(1, 6),
    stop_at=st.none() | st.integers(1, 6),
)
@example(  # found by this test: the cap reached, then compaction's calls on top of it
    script=[
        *(body([tool_use("echo", {"say": ""})], "tool_use") for _ in range(3)),
        body([text("x")], "model_context_window_exceeded"),
    ],
    max_iterations=4,
    stop_at=None,
)
def test_loop_invariants(
    script: list[dict[str, Any]], max_iterations: int, stop_at: int | None
) -> None:
    hooks = StopAt(stop_at)
    provider = ScriptedProvider(script)
    result = asyncio.run(
        run_turn(
            "question",
            provider=provider,
            toolset=toolset(),
            budget=Budget(max_iterations=max_iterations),
            hooks=hooks,
        )
    )

    # one finalisation, and the last publish is the only done one, with the highest version
    assert hooks.finishes == 1
    published = [s.to_json() for s in hooks.published]
    assert [s["done"] for s in published] == [False] * (len(published) - 1) + [True]
    versions = [s["version"] for s in published]
    assert all(a < b for a, b in itertools.pairwise(versions))
    final = published[-1]
    assert final == result.state.to_json()
    assert final["status"] == result.state.status
    assert final["activity"] is None
    assert result.outcome is not None, "no tool waits for approval here"
    assert final["has_error"] == ending(result.outcome).has_error
    assert final["stopped"] == (result.outcome is Outcome.STOPPED)

    # iterations never exceed the cap; compaction's own calls are not iterations (a reply
    # that stopped on the context window, the summary, then the same call sent again)
    compacting = sum(1 for call in result.trace.calls if call.decision == "compaction")
    assert len(provider.requests) - compacting <= max_iterations
    assert result.usage.iterations <= max_iterations

    # no empty bubble; only a finished turn ends on model text
    for m in final["messages"]:
        assert ("text" in m and m["text"].strip()) or m.get("key")
    if result.outcome is not Outcome.FINISHED:
        assert "key" in final["messages"][-1]

    # the history is valid to send again
    assert_valid_history(result.history)

    # and the trace replays to the same decisions and outcome
    replayed = asyncio.run(replay(result.trace)).trace
    assert first_difference(result.trace, replayed) is None
