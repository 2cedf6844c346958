"""Prices: known tokens times known prices give a known cost; unknown models cost nothing known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnkeeper.errors import ConfigError
from turnkeeper.observe import prices
from turnkeeper.observe.prices import Price, PriceTable
from turnkeeper.providers import chat_api
from turnkeeper.usage import Usage


def test_a_model_is_found_by_its_name_or_a_dated_snapshot_of_it() -> None:
    table = prices.load(environ={})
    assert table.price("claude-sonnet-4-5") == Price(3.0, 15.0, 3.75, 0.30)
    assert table.price("claude-sonnet-4-5-20250929") == Price(3.0, 15.0, 3.75, 0.30)
    assert table.price("gpt-4.1-mini-2025-04-14") == table.price("gpt-4.1-mini")
    assert table.price("gpt-4.1-mini") != table.price("gpt-4.1"), "the longest name wins"
    assert table.price("claude-scripted") is None
    assert table.price(None) is None


def test_anthropic_cost_counts_every_kind_of_token_at_its_price() -> None:
    table = PriceTable({"m": Price(input=3, output=15, cache_write=3.75, cache_read=0.3)})
    usage = Usage(1, 1_000, 2_000, 4_000, 10_000)
    # 1000*3 + 2000*15 + 4000*3.75 + 10000*0.3 = 3000 + 30000 + 15000 + 3000 per million
    assert table.cost(usage, "m") == pytest.approx(0.051)


def test_openai_input_tokens_include_the_cached_ones_so_they_are_not_paid_twice() -> None:
    table = PriceTable({"m": Price(input=2, output=8, cache_write=2, cache_read=0.5)})
    raw = {"prompt_tokens": 1_000, "completion_tokens": 100}
    usage = chat_api.parse_usage({**raw, "prompt_tokens_details": {"cached_tokens": 400}})
    assert (usage.input_tokens, usage.cache_read_input_tokens) == (600, 400)
    # 600*2 + 400*0.5 + 100*8 = 1200 + 200 + 800 per million
    assert table.cost(usage, "m", "openai") == pytest.approx(0.0022)


def test_a_model_without_a_price_leaves_the_cost_unknown_not_zero() -> None:
    usage = prices.load(environ={}).priced(Usage(1, 100, 100), "my-own-model")
    assert usage.cost_usd is None
    assert "cost_usd" not in usage.as_dict()


def test_a_turns_cost_is_the_sum_of_its_calls_and_unknown_once_a_call_is_unpriced() -> None:
    total = Usage()
    total.add(Usage(1, 10, 5, cost_usd=0.25))
    total.add(Usage(1, 10, 5, cost_usd=0.5))
    assert total.cost_usd == pytest.approx(0.75)
    assert total.as_dict()["cost_usd"] == pytest.approx(0.75)
    total.add(Usage())  # a turn that made no call changes nothing
    assert total.cost_usd == pytest.approx(0.75)
    total.add(Usage(1, 10, 5))
    assert total.cost_usd is None
    assert Usage.from_dict({"iterations": 1, "cost_usd": 0.125}).cost_usd == 0.125


def test_a_prices_file_extends_and_overrides_the_shipped_table(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(
        json.dumps({"my-model": {"input": 1, "output": 2}, "gpt-4o": {"input": 9, "output": 9}})
    )
    table = prices.load(path, environ={})
    assert table.price("my-model") == Price(1.0, 2.0)
    assert table.price("gpt-4o") == Price(9.0, 9.0)
    assert table.price("claude-haiku-4-5") is not None
    from_env = prices.load(environ={prices.ENV: str(path)})
    assert from_env.price("my-model") == Price(1.0, 2.0)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("not json", "cannot read prices"),
        ("[1, 2]", "must map model names"),
        ('{"m": {"input": 1}}', "needs at least input and output"),
        ('{"m": {"input": 1, "output": -2}}', "m.output must be a number of zero or more"),
        ('{"m": {"input": 1, "output": 2, "cached": 1}}', "unknown fields cached"),
    ],
)
def test_an_unusable_prices_file_is_one_clear_error(
    tmp_path: Path, content: str, says: str
) -> None:
    path = tmp_path / "prices.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=says):
        prices.load(path, environ={})


def test_a_cache_price_left_out_is_the_providers_documented_multiple_of_input() -> None:
    """Anthropic: writes 1.25x (2x for an hour), reads 0.1x; an OpenAI-compatible model's
    cached tokens at the input price itself, since their discount differs by model."""
    table = PriceTable({"m": Price(input=4, output=20)})
    usage = Usage(1, input_tokens=1_000, output_tokens=0)
    usage.cache_creation_input_tokens, usage.cache_read_input_tokens = 2_000, 10_000
    # 1000*4 + 2000*5 + 10000*0.4 = 4000 + 10000 + 4000 per million
    assert table.cost(usage, "m", "anthropic") == pytest.approx(0.018)
    # the hour's writes: 2000*8 instead of 2000*5
    assert table.cost(usage, "m", "anthropic", cache_ttl="1h") == pytest.approx(0.024)
    # 1000*4 + 2000*4 + 10000*4
    assert table.cost(usage, "m", "openai") == pytest.approx(0.052)
    assert Price(4, 20).cache_rates("anthropic") == (5.0, 8.0, 0.4)


def test_shipped_prices_price_an_hours_writes_at_twice_the_input() -> None:
    table = prices.load(environ={})
    usage = Usage(1, cache_creation_input_tokens=1_000_000)
    assert table.cost(usage, "claude-sonnet-4-6", cache_ttl="5m") == pytest.approx(3.75)
    assert table.cost(usage, "claude-sonnet-4-6", cache_ttl="1h") == pytest.approx(6.0)
    assert table.price("claude-opus-4-6-20260101") == Price(5.0, 25.0, 6.25, 0.50)


def test_a_prices_file_may_price_each_kind_of_cache_token(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    entry = {"input": 1, "output": 2, "cache_write": 1.5, "cache_write_1h": 2.5, "cache_read": 0.2}
    path.write_text(json.dumps({"my-model": entry}))
    price = prices.load(path, environ={}).price("my-model")
    assert price == Price(1.0, 2.0, cache_write=1.5, cache_read=0.2, cache_write_1h=2.5)
    assert price.cache_rates("anthropic") == (1.5, 2.5, 0.2)
