"""Limits (issue 31) as values and in the loop: checked when the assistant is made, the
door's arithmetic, and a turn that ends `limit_reached` before a call it cannot pay for."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from tests import scripts
from tests.models import LOOKUP
from turnkeeper import (
    Assistant,
    Compaction,
    ConfigError,
    Limits,
    LocalHooks,
    Outcome,
    ScriptedProvider,
    run_turn,
)
from turnkeeper.cli.run import exit_code
from turnkeeper.state import PublishedState
from turnkeeper.store.records import Checkpoint
from turnkeeper.turn.replay import first_difference, replay
from turnkeeper.turn.setting import TurnSetting
from turnkeeper.usage import (
    Day,
    Ledger,
    Meter,
    Usage,
    billed,
    limits_for,
    refused,
    spent,
    until_midnight,
)
from turnkeeper.wire import Message


@pytest.mark.parametrize(
    "given",
    [
        {"turns_per_minute": 0},
        {"tokens_per_day": -5},
        {"tokens_per_day": 1.5},
        {"turns_per_minute": True},
        {"cost_per_day": 0},
        {"cost_per_day": float("nan")},
        {"cost_per_day": "1"},
    ],
)
def test_an_unusable_limit_is_a_config_error_naming_it(given: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match=next(iter(given))):
        Limits(**given)  # type: ignore[arg-type]


def test_a_days_cost_needs_a_priced_model_when_the_assistant_is_made() -> None:
    with pytest.raises(ConfigError, match="'my-own-model' has no price"):
        Assistant(model="my-own-model", limits=Limits(cost_per_day=5))
    Assistant(model="my-own-model", limits=Limits(tokens_per_day=5000))  # tokens need none
    Assistant(model="claude-sonnet-4-6", limits=Limits(cost_per_day=5))
    with pytest.raises(ConfigError, match="limits must be"):
        Assistant(limits="lots")  # type: ignore[arg-type]


def test_limits_may_be_a_function_of_the_user_for_tiers() -> None:
    def tiers(user: str | None) -> Limits | None:
        return None if user == "staff" else Limits(turns_per_minute=5)

    assert limits_for(tiers, "staff") is None
    assert limits_for(tiers, "ada") == Limits(turns_per_minute=5)
    with pytest.raises(TypeError, match="must return Limits or None"):
        limits_for(lambda user: {"turns_per_minute": 5}, "ada")  # type: ignore[arg-type,return-value]


def test_the_door_waits_for_the_minute_to_free_or_for_midnight() -> None:
    now = datetime(2026, 12, 2, 23, 59, 30, tzinfo=UTC)
    three = Limits(turns_per_minute=3, tokens_per_day=2000)
    assert refused(three, Ledger((50.0, 20.0), Day(1999)), now) is None
    # full: the oldest of the three leaves the window in 10 s
    assert refused(three, Ledger((50.0, 20.0, 1.0), Day()), now) == ("limits.turns_per_minute", 10)
    # over by two (concurrent requests): the third oldest must leave first
    assert refused(three, Ledger((59.5, 50.0, 20.0, 5.0, 1.0), Day()), now) == (
        "limits.turns_per_minute",
        40,
    )
    assert refused(three, Ledger((), Day(2000)), now) == ("limits.tokens_per_day", 30)
    assert until_midnight(datetime(2026, 12, 2, 0, 0, 0, tzinfo=UTC)) == 86400
    assert spent(Limits(cost_per_day=0.01), Day(0, 0.01)) == "limits.cost_per_day"
    assert spent(Limits(cost_per_day=0.01), Day(10**9, 0.0099)) is None


def test_a_meter_charges_what_was_billed_since_its_last_charge() -> None:
    meter = Meter(Limits(tokens_per_day=1000), "ada", Usage(iterations=1, input_tokens=100))
    first = meter.charge(Usage(iterations=2, input_tokens=400, output_tokens=50, cost_usd=0.5))
    assert (first.subject, first.tokens) == ("ada", 350), "the earlier job's 100 were charged"
    again = meter.charge(Usage(iterations=2, input_tokens=400, output_tokens=50, cost_usd=0.5))
    assert (again.tokens, again.cost_usd, again.adds) == (0, 0.0, False), "nothing new: a read"
    assert not meter.reading().adds
    assert meter.reached() is None, "nothing read back yet"
    cached = Usage(2, 400, 60, cache_creation_input_tokens=7, cache_read_input_tokens=11)
    assert meter.charge(cached).tokens == billed(cached) - 450 == 28, "as billed, cache too"
    again.total = Day(1000, 0.5)
    meter.read(again)
    assert meter.reached() == "limits.tokens_per_day"
    assert Meter(Limits(tokens_per_day=1), None, Usage()).subject == "", "the whole assistant"


def test_today_is_the_utc_day_of_the_clock_and_turns_at_midnight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time

    from turnkeeper import usage

    midnight = datetime(2026, 12, 3, tzinfo=UTC).timestamp()
    monkeypatch.setattr(time, "time", lambda: midnight - 0.001)
    assert usage.today() == "2026-12-02"
    monkeypatch.setattr(time, "time", lambda: midnight)
    assert usage.today() == "2026-12-03", "the cached day ends at midnight"
    monkeypatch.setattr(time, "time", lambda: midnight - 86400.5)
    assert usage.today() == "2026-12-01", "a clock set back is asked again"
    assert usage.today(datetime(2026, 12, 2, 23, 0, tzinfo=UTC)) == "2026-12-02"


class SpentAfter(LocalHooks):
    """The ledger says the day is used up after `calls` model calls."""

    def __init__(self, calls: int) -> None:
        super().__init__(reporter=lambda report: None)
        self.calls = calls
        self.checks = 0

    def limit_reached(self) -> str | None:
        self.checks += 1
        return "limits.tokens_per_day" if self.checks > self.calls else None


async def test_a_turn_whose_day_is_used_up_ends_limit_reached_before_the_next_call() -> None:
    provider = ScriptedProvider(
        [scripts.asks(scripts.tool_use("lookup")), scripts.answer("never asked")]
    )
    hooks = SpentAfter(1)
    result = await run_turn("look it up", provider=provider, toolset=LOOKUP, hooks=hooks)
    assert result.outcome is Outcome.LIMIT_REACHED
    assert len(provider.requests) == 1, "the call the day could not pay for was not made"
    state = result.state.to_json()
    assert (state["status"], state["done"], state["has_error"]) == ("limit_reached", True, False)
    assert state["messages"][-1]["key"] == "notices.limit_reached"
    assert result.history[-1]["content"][0]["type"] == "tool_result", "the tool's answer stays"
    (report,) = hooks.reports
    assert (report.event, report.level) == ("limit_reached", logging.INFO)
    assert "limits.tokens_per_day is used up" in report.message
    assert exit_code(result.outcome) == 1
    again = await replay(result.trace)
    assert again.outcome is Outcome.LIMIT_REACHED
    assert first_difference(result.trace, again.trace) is None


async def test_limit_reached_is_a_metrics_label_from_zero_and_counts_the_turn() -> None:
    from tests.test_metrics import samples
    from turnkeeper.observe.metrics import Metrics

    metrics = Metrics()
    label = ("turnkeeper_turns_total", (("outcome", "limit_reached"),))
    assert samples(metrics)[label] == 0, "every outcome is a label before any turn"
    provider = ScriptedProvider([scripts.asks(scripts.tool_use("lookup"))])
    await run_turn("q", provider=provider, toolset=LOOKUP, hooks=SpentAfter(1), watcher=metrics)
    assert samples(metrics)[label] == 1


class Ledgered(LocalHooks):
    """In-memory hooks whose writes charge a day kept here through a real `Meter`, as the
    store's do: every write adds what the turn billed since its last one, and the
    `running` publish and each checkpoint read the day back."""

    def __init__(self, tokens_per_day: int) -> None:
        super().__init__(reporter=lambda report: None)
        self.meter = Meter(Limits(tokens_per_day=tokens_per_day), "ada", Usage())
        self.day = Day()

    def charged(self, usage: Usage | None, read: bool) -> None:
        charge = self.meter.reading() if usage is None else self.meter.charge(usage)
        self.day = Day(self.day.tokens + charge.tokens, self.day.cost_usd + charge.cost_usd)
        charge.total = self.day if read else None
        self.meter.read(charge)

    def limit_reached(self) -> str | None:
        return self.meter.reached()

    async def started(self, state: PublishedState) -> None:
        await super().started(state)
        self.charged(None, read=True)

    async def record_usage(self, usage: Usage) -> None:
        await super().record_usage(usage)
        self.charged(usage, read=False)

    async def checkpoint(self, checkpoint: Checkpoint) -> None:
        await super().checkpoint(checkpoint)
        self.charged(checkpoint.usage, read=True)


@pytest.mark.parametrize(("tokens_per_day", "sent"), [(1_000, 1), (1_500, 2)])
async def test_a_turn_stopped_by_its_compactions_calls_replays_to_the_same_end(
    tokens_per_day: int, sent: int
) -> None:
    """A reply cut by the context window bills 1,000 tokens, the summary 500: the day ends
    the turn before the summary or before the request is sent again; so does its replay."""
    cut = scripts.body([], "model_context_window_exceeded", usage=scripts.usage(900, 100))
    summary = scripts.answer("A summary.", usage=scripts.usage(400, 100))
    provider = ScriptedProvider([cut, summary, scripts.answer("never sent")])
    history: list[Message] = [
        {"role": "user", "content": "an earlier question"},
        {"role": "assistant", "content": [scripts.text("an earlier answer")]},
    ]
    setting = TurnSetting(compaction=Compaction())
    hooks = Ledgered(tokens_per_day)
    result = await run_turn("and now?", provider=provider, history=history, hooks=hooks,
                            setting=setting)  # fmt: skip
    assert result.outcome is Outcome.LIMIT_REACHED
    assert len(provider.requests) == sent
    assert result.usage.iterations == sent
    assert hooks.day.tokens == [1_000, 1_500][sent - 1], "every call made, charged"
    again = await replay(result.trace)
    assert again.outcome is Outcome.LIMIT_REACHED
    assert first_difference(result.trace, again.trace) is None


@pytest.mark.parametrize("path", ["over the trigger", "refused for its size"])
async def test_a_summary_that_uses_up_the_day_keeps_the_call_it_was_for_from_being_made(
    path: str,
) -> None:
    """Compaction's other two ways in: the request would pass the trigger, so it is
    summarised before it is sent; or the API refuses it for its size (billing nothing) and
    it is summarised to be sent again. Either way a 1,000-token summary uses up the day, the
    call it was for is not made, and the replay ends the same."""
    summary = scripts.answer("A summary.", usage=scripts.usage(900, 100))
    too_long = {"type": "error", "error": {"type": "invalid_request_error",
                "message": "prompt is too long: 7000 tokens > 6000 maximum"}}  # fmt: skip
    first = [] if path == "over the trigger" else [too_long]
    provider = ScriptedProvider([*first, summary, scripts.answer("never sent")])
    history: list[Message] = []
    for n in range(4):
        history += [
            {"role": "user", "content": f"question {n}"},
            {"role": "assistant", "content": [scripts.text(f"answer {n}")]},
        ]
    window = Compaction(window=100, at=0.5) if path == "over the trigger" else Compaction()
    hooks = Ledgered(1_000)
    result = await run_turn("and now?", provider=provider, history=history, hooks=hooks,
                            setting=TurnSetting(compaction=window))  # fmt: skip
    assert result.outcome is Outcome.LIMIT_REACHED
    assert len(provider.requests) == len(first) + 1, "the summary made, the call it was for not"
    assert hooks.day.tokens == 1_000
    again = await replay(result.trace)
    assert again.outcome is Outcome.LIMIT_REACHED
    assert first_difference(result.trace, again.trace) is None


def test_a_charge_not_read_back_is_added_to_the_day_last_read() -> None:
    meter = Meter(Limits(tokens_per_day=1_000), "ada", Usage())
    reading = meter.reading()
    reading.total = Day(900, 0.0)
    meter.read(reading)
    assert meter.reached() is None
    meter.read(meter.charge(Usage(input_tokens=80, output_tokens=20, iterations=1)))
    assert meter.reached() == "limits.tokens_per_day", "its own call counted before the next"
