"""Compaction in one process (issue 30): its settings, a turn that compacts as a library call,
its replay, its instruments and `trace show`."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from tests import scripts
from tests.test_metrics import samples
from tests.window_server import READ_NOTES, WindowServer
from turnkeeper import Assistant, Compaction, ConfigError, LocalHooks, ScriptedProvider, run_turn
from turnkeeper.cli.timeline import render, rows
from turnkeeper.observe.metrics import Metrics
from turnkeeper.outcomes import Outcome
from turnkeeper.providers.anthropic import AnthropicProvider
from turnkeeper.store.records import Compacted
from turnkeeper.turn import replay
from turnkeeper.turn.compaction import window_of
from turnkeeper.turn.loop import TurnResult
from turnkeeper.turn.setting import TurnSetting
from turnkeeper.turn.summary import AFTER, HEAD
from turnkeeper.wire import Message

WINDOW = 6_000


@pytest.mark.parametrize(
    "settings",
    [
        {"window": 0},
        {"window": -5},
        {"window": 1.5},
        {"window": True},
        {"at": 0},
        {"at": 1},
        {"at": 1.5},
        {"at": -0.2},
        {"at": math.nan},
        {"at": "0.5"},
        {"keep_turns": -1},
        {"keep_turns": 1.5},
        {"model": ""},
        {"strategy": "forget"},
    ],
)
def test_unusable_compaction_settings_are_config_errors(settings: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="compaction"):
        Compaction(**settings)


def test_an_assistant_compacts_by_default_and_false_turns_it_off() -> None:
    assert Assistant().compacting == Compaction()
    assert Assistant(compaction=False).compacting is None
    given = Compaction(window=50_000, at=0.5, keep_turns=0, model="claude-haiku-4-5")
    assert Assistant(compaction=given).compacting is given
    with pytest.raises(ConfigError, match="compaction must be"):
        Assistant(compaction="on")  # type: ignore[arg-type]


def test_the_window_comes_from_the_known_models_unless_given() -> None:
    assert window_of("claude-sonnet-4-6") == 200_000
    assert window_of("openai/gpt-4o-mini") == 128_000
    assert window_of("a-model-of-my-own") is None
    assert Compaction().window_for("claude-sonnet-4-6") == 200_000
    assert Compaction(window=8_000).window_for("claude-sonnet-4-6") == 8_000


# ---- a conversation as library calls, against the fake Messages API ----------------


@pytest.fixture
def fake() -> Iterator[WindowServer]:
    with WindowServer(WINDOW) as server:
        yield server


class Recording(AnthropicProvider):
    """The Anthropic adapter, keeping every request's messages as the loop handed them."""

    sent: list[list[Message]]

    async def complete(self, history: Sequence[Message], *args: Any, **kwargs: Any) -> Any:
        self.sent.append(list(history))
        return await super().complete(history, *args, **kwargs)


async def talk(
    provider: AnthropicProvider, questions: Sequence[str], compaction: Compaction | None
) -> list[TurnResult]:
    """The questions as turns of one conversation, each after the last one's history; the
    compaction record is handed on as the store would."""
    history: list[Message] = []
    record: Compacted | None = None
    results: list[TurnResult] = []
    for question in questions:
        hooks = LocalHooks()
        result = await run_turn(
            question,
            provider=provider,
            toolset=READ_NOTES,
            history=history,
            hooks=hooks,
            setting=TurnSetting(compaction=compaction, compacted=record),
        )
        record = next((c.compacted for c in reversed(hooks.checkpoints) if c.compacted), record)
        history, results = result.history, [*results, result]
    return results


QUESTIONS = [
    "Please remember: the code word is pomegranate.",
    *(f"Please read the notes for day {n}." for n in range(1, 20)),
    "What is the code word?",
]


async def test_a_turn_that_compacted_replays_with_the_same_requests(fake: WindowServer) -> None:
    provider = Recording(model="claude-fake", base_url=fake.url, api_key="k", stream=False)
    provider.sent = []
    results = await talk(provider, QUESTIONS, compaction=Compaction(window=WINDOW))
    assert [r.outcome for r in results] == [Outcome.FINISHED] * len(QUESTIONS)
    assert results[-1].state.messages[-1].text == "The code word is pomegranate."
    compacted = [r for r in results if any(c.decision == "compaction" for c in r.trace.calls)]
    assert compacted, "a turn summarised the earlier conversation"
    recorded = compacted[-1].trace
    assert recorded.request["compaction"]["settings"]["window"] == WINDOW

    sent: list[list[Message]] = []
    original = replay.ReplayProvider.complete

    async def kept(self: Any, history: Sequence[Message], *args: Any, **kwargs: Any) -> Any:
        sent.append(list(history))
        return await original(self, history, *args, **kwargs)

    replay.ReplayProvider.complete = kept  # type: ignore[method-assign]
    try:
        again = await replay.replay(recorded)
    finally:
        replay.ReplayProvider.complete = original  # type: ignore[method-assign]
    assert replay.first_difference(recorded, again.trace) is None
    assert sent == _requests_of(provider.sent, results, recorded)
    starts = [str(request[0]["content"]) for request in sent]
    assert any(start.startswith(HEAD) for start in starts), "a request began with the summary"
    heads = [r[0] for r in provider.sent if str(r[0]["content"]).startswith(HEAD)]
    assert len(heads) > len({json.dumps(h) for h in heads}), (
        "the summary is the same bytes on the calls after a compaction: the cache's prefix"
    )


def _requests_of(
    sent: list[list[Message]], results: list[TurnResult], recorded: Any
) -> list[list[Message]]:
    """The requests the recorded turn sent, out of every request of the conversation."""
    start = 0
    for result in results:
        if result.trace is recorded:
            return sent[start : start + len(recorded.calls)]
        start += len(result.trace.calls)
    raise AssertionError("the recorded turn is one of the results")


# ---- the model's own stop, and what the instruments see ------------------------------


def earlier_turns(n: int) -> list[Message]:
    history: list[Message] = []
    for i in range(n):
        history += [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": [scripts.text(f"answer {i}")]},
        ]
    return history


async def test_a_model_context_window_exceeded_stop_is_compacted_and_sent_once_more() -> None:
    full = scripts.body([], "model_context_window_exceeded")
    provider = ScriptedProvider([full, scripts.answer("The user likes tea."), scripts.answer("ok")])
    metrics = Metrics()
    result = await run_turn(
        "and now?",
        provider=provider,
        history=earlier_turns(3),
        watcher=metrics,
        setting=TurnSetting(compaction=Compaction()),
    )
    assert result.outcome is Outcome.FINISHED
    assert result.state.messages[-1].text == "ok"
    asked, again = provider.requests[1], provider.requests[2]
    assert len(asked) == 1
    assert "question 0" in asked[0]["content"]
    summarised = f"{HEAD}The user likes tea.\n\n{AFTER}and now?"
    assert again == [{"role": "user", "content": summarised}], "every earlier turn summarised"
    assert len(result.history) == 8, "the history is kept verbatim"
    assert [c.decision for c in result.trace.calls] == ["compaction", "compaction", "finished"]
    assert result.usage.iterations == 3, "every call that answered is counted, and billed"

    shown = render(rows(result.trace.calls), "finished")
    assert "compacted the request: summarised 3 turns" in shown
    assert "activity.compacted" in shown or "Summarised the earlier conversation" in shown
    counted = samples(metrics)
    assert counted[("turnkeeper_compactions_total", (("step", "summarised"),))] == 1
    assert counted[("turnkeeper_cleared_tool_results_total", ())] == 0


async def test_refused_again_the_turn_ends_context_exceeded_and_says_so() -> None:
    full = scripts.body([], "model_context_window_exceeded")
    provider = ScriptedProvider([full, scripts.answer("A summary."), full])
    hooks = LocalHooks()
    result = await run_turn("and now?", provider=provider, history=earlier_turns(2), hooks=hooks)
    assert result.outcome is Outcome.CONTEXT_EXCEEDED
    assert result.state.messages[-1].key == "errors.ai_context_full"
    assert len(provider.requests) == 3, "sent once more, and only once"


async def test_with_compaction_off_the_whole_history_is_sent_and_nothing_compacted() -> None:
    full = scripts.body([], "model_context_window_exceeded")
    provider = ScriptedProvider([full])
    result = await run_turn(
        "and now?",
        provider=provider,
        history=earlier_turns(2),
        setting=TurnSetting(compaction=None),
    )
    assert result.outcome is Outcome.CONTEXT_EXCEEDED
    assert len(provider.requests) == 1
    assert len(provider.requests[0]) == 5


async def test_the_turns_span_tells_of_each_compaction() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from turnkeeper.observe.telemetry import Telemetry

    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    full = scripts.body([], "model_context_window_exceeded")
    provider = ScriptedProvider([full, scripts.answer("A summary."), scripts.answer("ok")])
    await run_turn(
        "and now?", provider=provider, history=earlier_turns(2), watcher=Telemetry(tracing)
    )
    turn = next(s for s in exporter.get_finished_spans() if s.name == "invoke_agent")
    assert turn.attributes is not None
    assert turn.attributes["turnkeeper.compactions"] == 1
    assert turn.attributes["turnkeeper.cleared_tool_results"] == 0
    (event,) = [e for e in turn.events if e.name == "turnkeeper.compaction"]
    assert event.attributes == {
        "turnkeeper.summarised_turns": 2,
        "turnkeeper.cleared_tool_results": 0,
    }
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert len(chats) == 3, "the summary's call has its span"


def test_refusals_for_size_are_told_apart_with_the_window_they_state() -> None:
    from turnkeeper.errors import ContextTooLong
    from turnkeeper.providers import chat_api, messages_api

    anthropic = messages_api.error_from_body(
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 6512 tokens > 6000 maximum",
            },
        },
        400,
    )
    assert isinstance(anthropic, ContextTooLong)
    assert anthropic.window == 6000
    assert anthropic.key == "errors.ai_context_full"
    openai = chat_api.error_from_body(
        {
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However...",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
        400,
    )
    assert isinstance(openai, ContextTooLong)
    assert openai.window == 128000
    other = messages_api.error_from_body(
        {"type": "error", "error": {"type": "invalid_request_error", "message": "bad tools"}}, 400
    )
    assert not isinstance(other, ContextTooLong)


def error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


async def test_a_summary_that_fails_leaves_the_request_as_it_was_and_the_turn_goes_on() -> None:
    provider = ScriptedProvider([error_body("overloaded_error", "busy"), scripts.answer("ok")])
    result = await run_turn(
        "and now?",
        provider=provider,
        history=earlier_turns(4),
        setting=TurnSetting(compaction=Compaction(window=100, at=0.5)),
    )
    assert result.outcome is Outcome.FINISHED
    assert len(provider.requests[1]) == 9, "sent whole: nothing was compacted"
    first = result.trace.calls[0]
    assert first.error is not None
    assert first.error["kind"] == "ProviderUnavailable"
    assert result.trace.calls[1].compacted is None


async def test_a_refusal_for_size_from_the_api_is_compacted_and_sent_again() -> None:
    too_long = error_body("invalid_request_error", "prompt is too long: 7000 tokens > 6000 maximum")
    provider = ScriptedProvider(
        [too_long, scripts.answer("Earlier: four questions."), scripts.answer("ok")]
    )
    hooks = LocalHooks()
    result = await run_turn("and now?", provider=provider, history=earlier_turns(4), hooks=hooks)
    assert result.outcome is Outcome.FINISHED
    assert provider.requests[2][0]["content"] == (
        f"{HEAD}Earlier: four questions.\n\n{AFTER}and now?"
    )
    assert [c.error["kind"] if c.error else c.decision for c in result.trace.calls] == [
        "ContextTooLong",
        "compaction",
        "finished",
    ]
    written = [c.compacted for c in hooks.checkpoints if c.compacted is not None]
    summarised = Compacted(8, 8, "Earlier: four questions.", turns=4, window=6000)
    assert written == [summarised], "the window the refusal stated is kept for the next turns"
    assert "activity.compacted" in [s.activity for s in hooks.published]


async def test_the_server_strategy_asks_the_anthropic_api_to_compact(fake: WindowServer) -> None:
    """`strategy="server"`: the API's context management at `at` x the window, in every
    request, and no summary of turnkeeper's own before a call."""
    provider = Recording(model="claude-fake", base_url=fake.url, api_key="k", stream=False)
    provider.sent = []
    settings = Compaction(window=WINDOW, strategy="server")
    results = await talk(provider, QUESTIONS[:10], compaction=settings)
    assert [r.outcome for r in results] == [Outcome.FINISHED] * 10
    edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 4500}}
    assert all(b["context_management"] == {"edits": [edit]} for b in fake.requests)
    assert fake.summaries == 0
    assert results[0].trace.request["server_compaction"] == 4500
    assert provider.server_compaction is None, "the assistant's provider is left as it was"


def test_the_server_strategy_is_turnkeepers_own_where_the_provider_has_none() -> None:
    from turnkeeper.turn.compacting import served

    provider = ScriptedProvider([scripts.answer("ok")])
    assert served(provider, Compaction(strategy="server")) is provider


async def test_summaries_are_written_by_the_model_named_without_the_instructions(
    fake: WindowServer,
) -> None:
    provider = Recording(
        model="claude-fake", base_url=fake.url, api_key="k", stream=False, system="Be brief."
    )
    provider.sent = []
    settings = Compaction(window=WINDOW, model="claude-summariser")
    results = await talk(provider, QUESTIONS, compaction=settings)
    assert results[-1].outcome is Outcome.FINISHED
    asked = [b for b in fake.requests if "You are compacting" in json.dumps(b["messages"][-1])]
    assert asked, "summaries were asked for"
    assert {b["model"] for b in asked} == {"claude-summariser"}
    assert all("system" not in b and "tools" not in b for b in asked)
    others = [b for b in fake.requests if b not in asked]
    assert {b["model"] for b in others} == {"claude-fake"}
    assert all(b["system"] for b in others)


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
async def test_a_turn_whose_own_tool_results_outgrow_the_window_clears_them_and_finishes(
    fake: WindowServer, wire: str
) -> None:
    from tests.test_compaction import provider_for
    from turnkeeper import Budget

    result = await run_turn(
        "Please read the notes 14 times.",
        provider=provider_for(wire, fake),
        toolset=READ_NOTES,
        budget=Budget(max_iterations=20),
        setting=TurnSetting(compaction=Compaction(window=WINDOW)),
    )
    assert result.outcome is Outcome.FINISHED
    assert result.usage.iterations == 15
    assert max(fake.tokens) <= WINDOW
    assert fake.refused == 0
    assert any("cleared" in (c.compacted or "") for c in result.trace.calls)
    assert fake.summaries == 0, "nothing before the turn to summarise"


async def test_a_summary_that_leaves_no_time_for_its_call_ends_the_turn_time_limit() -> None:
    now = [0.0]

    class Slow(ScriptedProvider):
        async def complete(self, history: Sequence[Message], *args: Any, **kwargs: Any) -> Any:
            if str(history[0]["content"]).startswith("You are compacting"):
                now[0] += 179.0  # the summary takes nearly all of the turn's 180 s
            return await super().complete(history, *args, **kwargs)

    provider = Slow([scripts.answer("A summary."), scripts.answer("never sent")])
    result = await run_turn(
        "and now?",
        provider=provider,
        history=earlier_turns(4),
        setting=TurnSetting(clock=lambda: now[0], compaction=Compaction(window=100, at=0.5)),
    )
    assert result.outcome is Outcome.TIME_LIMIT
    assert result.state.messages[-1].key == "errors.ai_time_limit"
    assert len(provider.requests) == 1, "the call the summary was for is never sent"
