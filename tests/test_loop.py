"""Every row of docs/design.md §3, driven by scripted responses."""

from __future__ import annotations

import asyncio
import gc
import logging
import weakref
from collections.abc import Sequence
from typing import Any

import pytest

from tests.scripts import (
    answer,
    asks,
    assert_valid_history,
    body,
    server_tool_use,
    text,
    tool_use,
    usage,
)
from turnkeeper import (
    Budget,
    LocalHooks,
    Outcome,
    ProviderFailed,
    ProviderUnavailable,
    ScriptedProvider,
    run_turn,
)
from turnkeeper.observe.report import Report
from turnkeeper.providers import TextSink
from turnkeeper.state import PublishedState
from turnkeeper.store.records import Checkpoint
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.turn.loop import TurnResult
from turnkeeper.turn.setting import TurnSetting
from turnkeeper.usage import Usage
from turnkeeper.wire import Message, Reply, ToolResult, ToolSpec, ToolUse

QUESTION = "what's on my todo list?"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def echo_tool(calls: list[dict[str, Any]]) -> Tool:
    def echo(args: dict[str, Any]) -> str:
        calls.append(args)
        return f"echo {args.get('say', '')}"

    return Tool(ToolSpec("echo", "Echo back."), echo)


def quiet_hooks() -> LocalHooks:
    return LocalHooks(reporter=lambda report: None)


async def turn(
    responses: Sequence[dict[str, Any]],
    *,
    tools: Sequence[Tool] = (),
    budget: Budget | None = None,
    hooks: LocalHooks | None = None,
    history: Sequence[Message] = (),
    clock: Clock | None = None,
) -> tuple[TurnResult, LocalHooks, ScriptedProvider]:
    hooks = hooks or quiet_hooks()
    provider = ScriptedProvider(responses)
    result = await run_turn(
        QUESTION,
        provider=provider,
        toolset=FunctionToolset(tools),
        budget=budget,
        hooks=hooks,
        history=history,
        setting=TurnSetting(clock=clock or Clock()),
    )
    return result, hooks, provider


def bot_texts(state: PublishedState | dict[str, Any]) -> list[str]:
    messages = (
        state.to_json()["messages"] if isinstance(state, PublishedState) else state["messages"]
    )
    return [m["text"] for m in messages if m["role"] == "bot" and "text" in m]


def keys(state: PublishedState | dict[str, Any]) -> list[str]:
    messages = (
        state.to_json()["messages"] if isinstance(state, PublishedState) else state["messages"]
    )
    return [m["key"] for m in messages if "key" in m]


# ---- continue rows ------------------------------------------------------


async def test_tool_use_runs_the_tool_and_appends_content_and_results_verbatim() -> None:
    calls: list[dict[str, Any]] = []
    first = asks(tool_use("echo", {"say": "hi"}), say="Let me check.")
    first["content"][0]["citations"] = None  # a field turnkeeper does not know stays as it came
    result, _, _ = await turn([first, answer("done")], tools=[echo_tool(calls)])

    assert result.outcome is Outcome.FINISHED
    assert calls == [{"say": "hi"}]
    history = result.history
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[1]["content"] is first["content"]
    assert history[2]["content"] == [
        {"type": "tool_result", "tool_use_id": first["content"][1]["id"], "content": "echo hi"}
    ]
    assert bot_texts(result.state) == ["Let me check.", "done"]
    assert_valid_history(history)


async def test_a_finished_turn_is_freed_at_once_even_before_the_event_loop_runs_again() -> None:
    """Once its result is dropped, a turn is freed at once. An instant model never gives the
    event loop control: nothing the turn scheduled (the wait for a stop) nor a reference
    cycle may keep the turn, its history and its hooks alive until the loop or the garbage
    collector gets round to them (a batch of such turns grew without bound, and the
    collector's cost with it)."""
    hooks = quiet_hooks()
    kept = weakref.ref(hooks)
    gc.disable()
    try:
        script = [asks(tool_use("echo", {"say": "hi"})), answer("done")]
        result, _, _ = await turn(script, tools=[echo_tool([])], hooks=hooks)
        assert result.outcome is Outcome.FINISHED
        del hooks, result  # the result holds the turn, for its trace (built when asked)
        assert kept() is None, "the finished turn is still referenced"
    finally:
        gc.enable()


async def test_tool_use_stop_without_client_tool_uses_is_treated_like_pause_turn() -> None:
    server_only = body([server_tool_use("web_search", {"query": "x"})], "tool_use")
    result, _, provider = await turn([server_only, answer("found it")])
    assert result.outcome is Outcome.FINISHED
    assert len(provider.requests) == 2
    assert [m["role"] for m in result.history] == ["user", "assistant", "assistant"]


async def test_pause_turn_with_no_tool_calls_continues_and_resends() -> None:
    paused = body([server_tool_use("web_search"), text("Searching…")], "pause_turn")
    result, hooks, provider = await turn([paused, answer("the answer")])

    assert result.outcome is Outcome.FINISHED
    assert len(provider.requests) == 2
    assert provider.requests[1][-1] == {"role": "assistant", "content": paused["content"]}
    assert bot_texts(result.state) == ["Searching…", "the answer"]
    assert hooks.reports == []


async def test_pause_turn_counts_against_the_iteration_cap() -> None:
    paused = body([text("still going")], "pause_turn")
    result, hooks, provider = await turn([paused] * 5, budget=Budget(max_iterations=3))
    assert result.outcome is Outcome.ITERATION_LIMIT
    assert len(provider.requests) == 3
    assert [r.event for r in hooks.reports] == ["iteration_limit"]


async def test_compaction_appends_the_compaction_block_verbatim_and_continues() -> None:
    compacted = body(
        [{"type": "compaction", "content": "summary of earlier turns", "encrypted": "abc"}],
        "compaction",
    )
    result, _, provider = await turn([compacted, answer("ok")])
    assert result.outcome is Outcome.FINISHED
    assert provider.requests[1][-1]["content"] == compacted["content"]
    assert bot_texts(result.state) == ["ok"]


# ---- exit rows ------------------------------------------------------------


@pytest.mark.parametrize("stop_reason", ["end_turn", "stop_sequence"])
async def test_end_turn_and_stop_sequence_finish_with_the_joined_text(stop_reason: str) -> None:
    reply = body([text("  first "), tool_use("x"), text("second\n")], stop_reason)
    result, hooks, _ = await turn([reply])
    assert result.outcome is Outcome.FINISHED
    assert bot_texts(result.state) == ["  first \nsecond\n"]
    assert result.state.to_json()["has_error"] is False
    assert hooks.reports == []


async def test_a_response_without_text_adds_no_bubble() -> None:
    result, _, _ = await turn(
        [asks(tool_use("echo")), body([text("  \n ")], "tool_use"), answer("")],
        tools=[echo_tool([])],
    )
    assert result.outcome is Outcome.FINISHED
    assert [m["role"] for m in result.state.to_json()["messages"]] == ["user"]


async def test_max_tokens_never_renders_the_cut_text_and_is_reported() -> None:
    cut = body([text("The three steps are: first, wash the")], "max_tokens")
    result, hooks, _ = await turn([cut])

    assert result.outcome is Outcome.TRUNCATED
    state = result.state.to_json()
    assert bot_texts(state) == []
    assert state["messages"][-1] == {
        "id": "m2",
        "role": "bot",
        "key": "errors.ai_truncated",
        "is_error": True,
    }
    assert state["has_error"] is True
    assert state["status"] == "truncated"
    [report] = hooks.reports
    assert (report.event, report.level, report.stop_reason) == (
        "truncated",
        logging.WARNING,
        "max_tokens",
    )


async def test_max_tokens_in_the_middle_of_a_tool_use_leaves_a_valid_history() -> None:
    cut = body([text("I'll read it"), tool_use("echo", {"say": "par"})], "max_tokens")
    result, _, _ = await turn([cut], tools=[echo_tool([])])
    assert result.outcome is Outcome.TRUNCATED
    assert result.history[-1]["content"][0]["is_error"] is True
    assert_valid_history(result.history)


async def test_a_refusal_makes_exactly_one_model_call_and_is_not_an_error() -> None:
    refused = body([text("I can't help with that.")], "refusal")
    result, hooks, provider = await turn([refused, answer("rephrased!")])

    assert result.outcome is Outcome.REFUSED
    assert len(provider.requests) == 1
    assert provider.unused == 1
    assert result.state.to_json()["has_error"] is False
    assert result.state.to_json()["messages"][-1]["key"] == "errors.ai_refused"
    assert result.state.to_json()["messages"][-1]["is_error"] is True
    assert bot_texts(result.state) == []
    [report] = hooks.reports
    assert (report.event, report.level) == ("refused", logging.INFO)


async def test_context_window_exceeded_is_its_own_reported_outcome() -> None:
    result, hooks, _ = await turn([body([text("partial")], "model_context_window_exceeded")])
    assert result.outcome is Outcome.CONTEXT_EXCEEDED
    assert keys(result.state) == ["errors.ai_context_full"]
    assert bot_texts(result.state) == []
    assert [r.event for r in hooks.reports] == ["context_exceeded"]


@pytest.mark.parametrize("stop_reason", ["something_new", None])
async def test_an_unknown_or_missing_stop_reason_fails_and_reports_the_raw_value(
    stop_reason: str | None,
) -> None:
    result, hooks, _ = await turn([body([text("hm")], stop_reason)])
    assert result.outcome is Outcome.FAILED
    assert keys(result.state) == ["errors.ai_failed"]
    assert bot_texts(result.state) == []
    [report] = hooks.reports
    assert report.stop_reason == stop_reason
    assert repr(stop_reason) in report.message


# ---- caps -------------------------------------------------------------------


async def test_the_iteration_cap_is_its_own_outcome_and_the_last_tools_are_not_run() -> None:
    calls: list[dict[str, Any]] = []
    responses = [asks(tool_use("echo", {"say": str(i)})) for i in range(5)]
    result, hooks, provider = await turn(
        responses, tools=[echo_tool(calls)], budget=Budget(max_iterations=3)
    )

    assert result.outcome is Outcome.ITERATION_LIMIT
    assert len(provider.requests) == 3
    assert calls == [{"say": "0"}, {"say": "1"}]
    last = result.history[-1]["content"][0]
    assert last["is_error"] is True
    assert "not run" in last["content"]
    assert result.state.to_json()["usage"]["iterations"] == 3
    assert keys(result.state) == ["errors.ai_iteration_limit"]
    assert [r.event for r in hooks.reports] == ["iteration_limit"]
    assert_valid_history(result.history)


class SlowScripted(ScriptedProvider):
    """A scripted model whose every call takes `seconds` of the fake clock."""

    def __init__(self, responses: Sequence[Any], clock: Clock, seconds: float) -> None:
        super().__init__(responses)
        self.clock = clock
        self.seconds = seconds
        self.timeouts: list[float] = []

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        self.timeouts.append(timeout)
        self.clock.t += self.seconds
        return await super().complete(history, tools, timeout, on_text)


async def test_the_deadline_ends_the_turn_before_a_call_it_cannot_finish() -> None:
    clock = Clock()
    provider = SlowScripted([asks(tool_use("echo")) for _ in range(5)], clock, seconds=40)
    hooks = quiet_hooks()
    result = await run_turn(
        QUESTION,
        provider=provider,
        toolset=FunctionToolset([echo_tool([])]),
        budget=Budget(deadline=100, call_timeout=60, margin=1, min_call=5),
        hooks=hooks,
        setting=TurnSetting(clock=clock),
    )

    assert result.outcome is Outcome.TIME_LIMIT
    # 100 s: calls start at 0 s (60 s timeout), 40 s (59 s left), 80 s (19 s left); at 120 s none.
    assert provider.timeouts == [60, 59, 19]
    assert keys(result.state) == ["errors.ai_time_limit"]
    assert [r.event for r in hooks.reports] == ["time_limit"]
    assert_valid_history(result.history)


async def test_a_call_is_refused_when_less_than_the_minimum_call_time_remains() -> None:
    clock = Clock()
    provider = SlowScripted([asks(tool_use("echo"))] * 5, clock, seconds=7)
    result = await run_turn(
        QUESTION,
        provider=provider,
        toolset=FunctionToolset([echo_tool([])]),
        budget=Budget(deadline=20, margin=1, min_call=5),
        hooks=quiet_hooks(),
        setting=TurnSetting(clock=clock),
    )
    # left before each call: 20 → 19 s, 13 → 12 s, 6 → 5 s, then -1: refused
    assert provider.timeouts == [19, 12, 5]
    assert result.outcome is Outcome.TIME_LIMIT


async def test_tools_are_not_run_once_the_deadline_has_passed() -> None:
    clock = Clock()
    calls: list[dict[str, Any]] = []
    provider = SlowScripted([asks(tool_use("echo")), answer("late")], clock, seconds=200)
    result = await run_turn(
        QUESTION,
        provider=provider,
        toolset=FunctionToolset([echo_tool(calls)]),
        hooks=quiet_hooks(),
        setting=TurnSetting(clock=clock),
    )
    assert result.outcome is Outcome.TIME_LIMIT
    assert calls == []
    assert result.history[-1]["content"][0]["is_error"] is True
    assert_valid_history(result.history)


def test_budget_derives_the_call_timeout_from_what_remains() -> None:
    budget = Budget(call_timeout=120, margin=2, min_call=5)
    assert budget.timeout_for_call(500) == 120
    assert budget.timeout_for_call(50) == 48
    assert budget.timeout_for_call(7) == 5
    assert budget.timeout_for_call(6.9) is None


@pytest.mark.parametrize(
    "bad",
    [{"max_iterations": 0}, {"deadline": 0}, {"deadline": float("nan")}, {"margin": -1}],
)
def test_an_unusable_budget_is_a_config_error(bad: dict[str, Any]) -> None:
    from turnkeeper import ConfigError

    with pytest.raises(ConfigError):
        Budget(**bad)


# ---- cancel -------------------------------------------------------------


async def test_cancel_before_the_first_call_makes_no_call_and_is_not_an_error() -> None:
    hooks = quiet_hooks()
    hooks.stop()
    result, _, provider = await turn([answer("never")], hooks=hooks)
    assert result.outcome is Outcome.STOPPED
    assert provider.requests == []
    state = result.state.to_json()
    assert (state["stopped"], state["has_error"], state["done"]) == (True, False, True)
    assert state["messages"][-1] == {
        "id": "m2",
        "role": "bot",
        "key": "notices.stopped",
        "is_error": False,
    }
    assert hooks.reports == []


async def test_cancel_during_a_tool_stops_before_the_next_call() -> None:
    hooks = quiet_hooks()

    def stop_now(args: dict[str, Any]) -> str:
        hooks.stop()
        return "ok"

    result, _, provider = await turn(
        [asks(tool_use("stop")), answer("never")],
        tools=[Tool(ToolSpec("stop", ""), stop_now)],
        hooks=hooks,
    )
    assert result.outcome is Outcome.STOPPED
    assert len(provider.requests) == 1
    assert_valid_history(result.history)


# ---- provider errors --------------------------------------------------------


class Raising(ScriptedProvider):
    def __init__(self, error: BaseException) -> None:
        super().__init__([])
        self.error = error

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        raise self.error


@pytest.mark.parametrize(
    ("error", "key"),
    [
        (ProviderUnavailable("overloaded_error: Overloaded", status=529), "errors.ai_unavailable"),
        (ProviderFailed("invalid_request_error", status=400), "errors.ai_failed"),
        (ValueError("garbled"), "errors.ai_failed"),
    ],
)
async def test_provider_errors_fail_the_turn_with_their_key_reported_once(
    error: Exception, key: str
) -> None:
    hooks = quiet_hooks()
    result = await run_turn(
        QUESTION, provider=Raising(error), hooks=hooks, setting=TurnSetting(clock=Clock())
    )
    assert result.outcome is Outcome.FAILED
    assert keys(result.state) == [key]
    assert result.state.to_json()["has_error"] is True
    [report] = hooks.reports
    assert report.event == "failed"
    assert report.level == logging.ERROR
    assert str(error) in report.message
    recorded = result.trace.calls[0].error
    assert recorded is not None
    assert str(recorded["message"]).endswith(str(error))


async def test_the_scripted_model_fails_loudly_when_asked_for_more_than_it_holds() -> None:
    result, hooks, _ = await turn([asks(tool_use("echo"))], tools=[echo_tool([])])
    assert result.outcome is Outcome.FAILED
    [report] = hooks.reports
    assert "holds 1 response and was asked for response 2" in report.message
    assert_valid_history(result.history)


# ---- one finalisation ---------------------------------------------------


class OrderHooks(LocalHooks):
    def __init__(self) -> None:
        super().__init__(reporter=lambda report: None)
        self.order: list[str] = []

    async def started(self, state: PublishedState) -> None:
        self.order.append("started")
        await super().started(state)

    async def record_usage(self, usage: Any) -> None:
        self.order.append("usage")
        await super().record_usage(usage)

    async def checkpoint(self, checkpoint: Checkpoint) -> None:
        self.order.append("checkpoint")
        await super().checkpoint(checkpoint)

    async def finish(self, final: Checkpoint) -> None:
        self.order.append("finish")
        await super().finish(final)


async def test_finalisation_runs_exactly_once_when_a_tool_raises() -> None:
    def broken(args: dict[str, Any]) -> str:
        raise RuntimeError("disk on fire")

    hooks = OrderHooks()
    result, _, _ = await turn(
        [asks(tool_use("broken")), answer("sorry, the tool broke")],
        tools=[Tool(ToolSpec("broken", ""), broken)],
        hooks=hooks,
    )
    assert result.outcome is Outcome.FINISHED
    assert hooks.finishes == 1
    assert [s.done for s in hooks.published].count(True) == 1
    # The answer asks for no tools: its usage rides with the final write, made at once.
    assert hooks.order == ["started", "usage", "checkpoint", "finish"]
    assert hooks.final is not None
    assert hooks.final.usage.iterations == 2
    assert [c.decision for c in hooks.checkpoints[0].calls] == ["continue"]
    assert [c.decision for c in hooks.final.calls] == ["finished"]
    assert hooks.final.state.done
    assert not hooks.checkpoints[0].state.done
    result_block = result.history[2]["content"][0]
    assert result_block["is_error"] is True
    assert "disk on fire" in result_block["content"]
    assert [r.event for r in hooks.reports] == ["tool_error"]


async def test_finalisation_runs_once_and_the_error_propagates_when_a_hook_fails() -> None:
    class FailingCheckpoint(OrderHooks):
        async def checkpoint(self, checkpoint: Any) -> None:
            raise ConnectionError("store went away")

    hooks = FailingCheckpoint()
    with pytest.raises(ConnectionError):
        await turn([asks(tool_use("echo")), answer("x")], tools=[echo_tool([])], hooks=hooks)
    assert hooks.finishes == 1
    final = hooks.published[-1].to_json()
    assert final["done"] is True
    assert final["status"] == "failed"
    assert [r.event for r in hooks.reports] == ["failed"]


async def test_published_versions_strictly_increase_and_only_the_last_is_done() -> None:
    hooks = quiet_hooks()
    await turn(
        [asks(tool_use("echo")), asks(tool_use("echo")), answer("x")],
        tools=[echo_tool([])],
        hooks=hooks,
    )
    versions = [s.version for s in hooks.published]
    assert versions == sorted(set(versions))
    assert versions[0] == 1
    assert [s.done for s in hooks.published] == [False] * 3 + [True]


async def test_the_published_state_has_exactly_the_contract_fields() -> None:
    result, _, _ = await turn([answer("hi")])
    assert set(result.state.to_json()) == {
        "turn_id",
        "conversation_id",
        "version",
        "status",
        "done",
        "stopped",
        "has_error",
        "activity",
        "messages",
        "usage",
    }
    assert result.state.to_json()["messages"][0] == {"id": "m1", "role": "user", "text": QUESTION}


# ---- activity and usage -------------------------------------------------


async def test_activity_is_the_last_tool_of_a_step_kept_across_steps_without_tools() -> None:
    hooks = quiet_hooks()
    responses = [
        asks(tool_use("echo"), tool_use("read_file", {"path": "todo.txt"})),
        body([text("thinking")], "pause_turn"),
        body([server_tool_use("web_fetch")], "pause_turn"),
        asks(tool_use("echo")),
        answer("done"),
    ]
    tools = [echo_tool([]), Tool(ToolSpec("read_file", ""), lambda args: "write tests")]
    await turn(responses, tools=tools, hooks=hooks)
    captions = [s.activity for s in hooks.published]
    assert captions == [
        None,
        "activity.read_file",
        "activity.read_file",
        "activity.web_fetch",
        None,  # echo is not in the table: silence, never an internal name
        None,  # cleared at the end
    ]


async def test_usage_is_summed_over_model_calls() -> None:
    responses = [
        asks(tool_use("echo")),
        body(
            [text("done")],
            "end_turn",
            usage=usage(
                100, 20, cache_read_input_tokens=50, server_tool_use={"web_search_requests": 2}
            ),
        ),
    ]
    hooks = quiet_hooks()
    result, _, _ = await turn(responses, tools=[echo_tool([])], hooks=hooks)
    assert result.usage.as_dict() == {
        "iterations": 2,
        "input_tokens": 110,
        "output_tokens": 25,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 50,
        "web_search_requests": 2,
        "web_fetch_requests": 0,
    }
    assert hooks.usage == result.usage
    assert result.state.to_json()["usage"]["input_tokens"] == 110


async def test_the_prior_history_is_kept_and_the_question_follows_it() -> None:
    prior: list[Message] = [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
        {"role": "assistant", "content": [text("hi!")]},
    ]
    _result, _, provider = await turn([answer("x")], history=prior)
    assert provider.requests[0][:2] == prior
    assert provider.requests[0][2] == {"role": "user", "content": QUESTION}
    assert len(prior) == 2  # the caller's list is not modified


async def test_an_empty_assistant_response_is_not_appended() -> None:
    result, _, _ = await turn([body([], "end_turn")])
    assert result.outcome is Outcome.FINISHED
    assert result.history == [{"role": "user", "content": QUESTION}]


async def test_the_default_reporter_logs_through_the_turnkeeper_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="turnkeeper"):
        await run_turn(
            QUESTION,
            provider=ScriptedProvider([body([], "max_tokens")]),
            setting=TurnSetting(turn_id="t_42"),
        )
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert "t_42" in record.getMessage()
    assert "truncated" in record.getMessage()
    fields: dict[str, Any] = record.turnkeeper  # type: ignore[attr-defined]
    assert fields["stop_reason"] == "max_tokens"
    assert fields["usage"]["iterations"] == 1


async def test_tool_uses_run_through_the_toolset_with_the_remaining_time() -> None:
    seen: list[float] = []

    class Timed:
        async def list_tools(self) -> Sequence[ToolSpec]:
            return [ToolSpec("t", "")]

        async def call(self, use: ToolUse, timeout: float) -> ToolResult:
            seen.append(timeout)
            return ToolResult(use.id, "ok")

    clock = Clock()
    provider = SlowScripted([asks(tool_use("t")), answer("x")], clock, seconds=30)
    await run_turn(
        QUESTION,
        provider=provider,
        toolset=Timed(),
        budget=Budget(deadline=50, tool_timeout=60, margin=1),
        hooks=quiet_hooks(),
        setting=TurnSetting(clock=clock),
    )
    assert seen == [19]


def test_reports_serialise_to_json_fields() -> None:
    report = Report("t_1", 2, "truncated", "cut", stop_reason="max_tokens")
    assert report.as_dict()["level"] == "WARNING"


def test_usage_serialises_every_field() -> None:
    from dataclasses import fields

    from turnkeeper.usage import Usage

    usage = Usage(*range(1, len(fields(Usage)) + 1))
    assert usage.as_dict() == {f.name: getattr(usage, f.name) for f in fields(Usage)}
    total = usage.copy()
    total.add(usage)
    assert total.as_dict() == {k: 2 * v for k, v in usage.as_dict().items()}


async def test_a_timeout_error_raised_by_a_toolset_is_reported_not_taken_for_the_deadline() -> None:
    class Raises:
        async def list_tools(self) -> Sequence[ToolSpec]:
            return [ToolSpec("slowpoke", "")]

        async def call(self, use: ToolUse, timeout: float) -> ToolResult:
            raise TimeoutError("upstream API timed out")

    hooks = quiet_hooks()
    result = await run_turn(
        QUESTION,
        provider=ScriptedProvider([asks(tool_use("slowpoke")), answer("x")]),
        toolset=Raises(),
        hooks=hooks,
    )
    assert result.outcome is Outcome.FINISHED
    assert [r.event for r in hooks.reports] == ["tool_error"]
    assert "upstream API timed out" in result.history[2]["content"][0]["content"]


class Hanging(ScriptedProvider):
    """A provider that ignores the timeout it is given and never answers."""

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def test_a_provider_that_ignores_its_timeout_is_stopped_at_the_deadline() -> None:
    hooks = quiet_hooks()
    result = await run_turn(
        QUESTION,
        provider=Hanging([]),
        hooks=hooks,
        budget=Budget(deadline=0.2, margin=0.01, min_call=0.01),
    )
    assert result.outcome is Outcome.TIME_LIMIT
    assert hooks.finishes == 1
    assert [r.event for r in hooks.reports] == ["time_limit"]
    assert result.state.to_json()["done"] is True
    recorded = result.trace.calls[0].error
    assert recorded is not None
    assert "a model call that ignored its timeout" in recorded["message"]


async def test_a_tool_round_timeout_answers_only_the_unfinished_tools() -> None:
    async def stuck(args: dict[str, Any]) -> str:
        await asyncio.Event().wait()
        return "never"

    first, second = tool_use("echo", {"say": "a"}), tool_use("stuck")
    result, hooks, _ = await turn(
        [asks(first, second), answer("ok")],
        tools=[echo_tool([]), Tool(ToolSpec("stuck", ""), stuck)],
        budget=Budget(tool_timeout=0.05),
    )
    assert result.outcome is Outcome.FINISHED
    assert result.history[2]["content"] == [
        {"type": "tool_result", "tool_use_id": first["id"], "content": "echo a"},
        {
            "type": "tool_result",
            "tool_use_id": second["id"],
            "content": "stuck did not finish within 0.1 s",
            "is_error": True,
        },
    ]
    assert hooks.reports == []


async def test_a_toolset_that_hangs_while_listing_is_stopped_at_the_deadline() -> None:
    class HangsListing:
        async def list_tools(self) -> Sequence[ToolSpec]:
            await asyncio.Event().wait()
            return []

        async def call(self, use: ToolUse, timeout: float) -> ToolResult:
            raise AssertionError("never called")

    hooks = quiet_hooks()
    result = await run_turn(
        QUESTION,
        provider=ScriptedProvider([answer("x")]),
        toolset=HangsListing(),
        hooks=hooks,
        budget=Budget(deadline=0.2, margin=0.01, min_call=0.01),
    )
    assert result.outcome is Outcome.TIME_LIMIT
    assert [r.event for r in hooks.reports] == ["time_limit"]


async def test_a_cancelled_turn_is_finalised_once_and_left_to_its_canceller_to_report() -> None:
    called = asyncio.Event()

    class Signals(Hanging):
        async def complete(
            self,
            history: Sequence[Message],
            tools: Sequence[ToolSpec],
            timeout: float,
            on_text: TextSink | None = None,
        ) -> Reply:
            called.set()
            return await super().complete(history, tools, timeout, on_text)

    hooks = quiet_hooks()
    task = asyncio.create_task(run_turn(QUESTION, provider=Signals([]), hooks=hooks))
    await asyncio.wait_for(called.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert hooks.finishes == 1
    assert hooks.published[-1].to_json()["status"] == "failed"
    assert hooks.published[-1].to_json()["done"] is True
    assert hooks.reports == []


async def test_usage_is_recorded_before_the_tools_run_and_rides_with_a_tool_less_answer() -> None:
    hooks = OrderHooks()
    seen: list[int] = []

    def probe(args: dict[str, Any]) -> str:
        seen.append(hooks.usage.iterations)  # a crash in the tool loses no billed tokens
        return "ok"

    result, _, _ = await turn(
        [asks(tool_use("probe")), answer("done")],
        tools=[Tool(ToolSpec("probe", ""), probe)],
        hooks=hooks,
    )
    assert result.outcome is Outcome.FINISHED
    assert seen == [1]
    assert hooks.order == ["started", "usage", "checkpoint", "finish"]
    assert hooks.final is not None
    assert hooks.final.usage.iterations == 2


class StoreAway(LocalHooks):
    """Hooks whose write of the turn's usage waits for a store that does not come back."""

    def __init__(self) -> None:
        super().__init__(reporter=lambda report: None)

    async def record_usage(self, spent: Usage) -> None:
        await asyncio.Event().wait()


async def test_a_write_that_waits_out_the_deadline_is_not_blamed_on_the_model() -> None:
    hooks = StoreAway()
    result = await run_turn(
        QUESTION,
        provider=ScriptedProvider([asks(tool_use("echo", {"text": "x"})), answer("done")]),
        toolset=FunctionToolset([echo_tool([])]),
        hooks=hooks,
        budget=Budget(deadline=0.3, margin=0.01, min_call=0.01),
    )
    assert result.outcome is Outcome.TIME_LIMIT
    [reported] = hooks.reports
    assert "a write of the turn waited for the store" in reported.message
    assert "model call" not in reported.message
    assert all(call.error is None for call in result.trace.calls), "the call had answered"
