"""Prices: what a model call cost, in US dollars, from its usage and its model's price.

A shipped table covers current Anthropic and OpenAI models; a JSON file
(`--prices FILE` or `TURNKEEPER_PRICES`) extends or overrides it, mapping a
model name to USD per million tokens:

    {"my-model": {"input": 3, "output": 15, "cache_write": 3.75, "cache_read": 0.3}}

A model is found by its exact name, else by the longest known name it starts
with followed by `-` (so `claude-sonnet-4-5-20250929` is `claude-sonnet-4-5`).
A model with no price has no cost: `cost_usd` stays unknown, never zero.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .errors import ConfigError
from .usage import Usage

ENV = "TURNKEEPER_PRICES"
MILLION = 1_000_000


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float = 0.0
    cache_read: float = 0.0


# Published list prices, USD per million tokens (standard tier, prompts of 200k tokens
# or less). OpenAI does not charge for writing its cache: cache_write is the input price.
SHIPPED: dict[str, Price] = {
    "claude-opus-4-5": Price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-1": Price(15.0, 75.0, 18.75, 1.50),
    "claude-opus-4": Price(15.0, 75.0, 18.75, 1.50),
    "claude-sonnet-4-6": Price(3.0, 15.0, 3.75, 0.30),
    "claude-sonnet-4-5": Price(3.0, 15.0, 3.75, 0.30),
    "claude-sonnet-4": Price(3.0, 15.0, 3.75, 0.30),
    "claude-3-7-sonnet": Price(3.0, 15.0, 3.75, 0.30),
    "claude-haiku-4-5": Price(1.0, 5.0, 1.25, 0.10),
    "claude-3-5-haiku": Price(0.80, 4.0, 1.0, 0.08),
    "claude-3-haiku": Price(0.25, 1.25, 0.30, 0.03),
    "gpt-5": Price(1.25, 10.0, 1.25, 0.125),
    "gpt-5-mini": Price(0.25, 2.0, 0.25, 0.025),
    "gpt-5-nano": Price(0.05, 0.40, 0.05, 0.005),
    "gpt-4.1": Price(2.0, 8.0, 2.0, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.40, 0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.10, 0.025),
    "gpt-4o": Price(2.50, 10.0, 2.50, 1.25),
    "gpt-4o-mini": Price(0.15, 0.60, 0.15, 0.075),
    "o3": Price(2.0, 8.0, 2.0, 0.50),
    "o4-mini": Price(1.10, 4.40, 1.10, 0.275),
}

MEMO_LIMIT = 1024
"""Model names a table remembers its lookup for."""

CACHED_INCLUDED = {"openai"}
"""Wire formats whose input token count includes the cached tokens."""


class PriceTable:
    """Model names to prices."""

    def __init__(self, prices: Mapping[str, Price]) -> None:
        self.prices: Mapping[str, Price] = MappingProxyType(dict(prices))
        """Read-only: lookups are remembered (`extended()` makes a new table)."""
        self._by_length = sorted(self.prices, key=len, reverse=True)
        self._found: dict[str, Price | None] = {}
        """Model names already looked up (a turn asks for the same one on every call)."""

    def price(self, model: str | None) -> Price | None:
        if not model:
            return None
        try:
            return self._found[model]
        except KeyError:
            pass
        found = self.prices.get(model)
        if found is None:
            name = next((n for n in self._by_length if model.startswith(n + "-")), None)
            found = None if name is None else self.prices[name]
        if len(self._found) < MEMO_LIMIT:  # model names come from responses: keep it bounded
            self._found[model] = found
        return found

    def cost(self, usage: Usage, model: str | None, wire: str = "anthropic") -> float | None:
        """What `usage` cost with `model`'s price, or None if it has none."""
        price = self.price(model)
        if price is None:
            return None
        fresh = usage.input_tokens
        if wire in CACHED_INCLUDED:
            fresh = max(0, fresh - usage.cache_read_input_tokens)
        dollars = (
            fresh * price.input
            + usage.output_tokens * price.output
            + usage.cache_creation_input_tokens * price.cache_write
            + usage.cache_read_input_tokens * price.cache_read
        ) / MILLION
        return round(dollars, 10)

    def priced(self, usage: Usage, model: str | None, wire: str = "anthropic") -> Usage:
        """`usage` with its `cost_usd`, when `model` has a price."""
        cost = self.cost(usage, model, wire)
        if cost is None:
            return usage
        priced = usage.copy()
        priced.cost_usd = cost
        return priced

    def extended(self, overrides: Mapping[str, Price]) -> PriceTable:
        return PriceTable({**self.prices, **overrides})


def read_prices(path: str | Path) -> dict[str, Price]:
    """Prices from a JSON file; `ConfigError` with one clear line if it cannot be used."""
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigError(f"cannot read prices {path}: {e}") from e
    if not isinstance(data, dict):
        raise ConfigError(f"prices {path} must map model names to prices")
    return {str(model): _price(path, str(model), entry) for model, entry in data.items()}


def _price(path: str | Path, model: str, entry: Any) -> Price:
    fields = ("input", "output", "cache_write", "cache_read")
    if not isinstance(entry, dict) or not {"input", "output"} <= entry.keys():
        raise ConfigError(f"prices {path}: {model} needs at least input and output")
    unknown = set(entry) - set(fields)
    if unknown:
        raise ConfigError(f"prices {path}: {model} has unknown fields {', '.join(sorted(unknown))}")
    values = {k: entry.get(k, 0) for k in fields}
    for k, v in values.items():
        if not isinstance(v, int | float) or isinstance(v, bool) or v < 0:
            raise ConfigError(f"prices {path}: {model}.{k} must be a number of zero or more")
    return Price(**{k: float(v) for k, v in values.items()})


def load(path: str | Path | None = None, environ: Mapping[str, str] = os.environ) -> PriceTable:
    """The shipped table, extended by `path`, else by the file `TURNKEEPER_PRICES` names."""
    source = path or environ.get(ENV) or None
    table = PriceTable(SHIPPED)
    return table if source is None else table.extended(read_prices(source))


_current: PriceTable | None = None


def current() -> PriceTable:
    """The process's table: set by `use()`, else loaded once from the environment."""
    global _current
    if _current is None:
        _current = load()
    return _current


def use(table: PriceTable | None) -> None:
    """Make `table` the process's table (None: load it again from the environment)."""
    global _current
    _current = table


__all__ = ["ENV", "SHIPPED", "Price", "PriceTable", "current", "load", "read_prices", "use"]
