"""Prices: what a model call cost, in US dollars, from its usage and its model's price.

A shipped table covers current Anthropic and OpenAI models; a JSON file
(`--prices FILE` or `TURNKEEPER_PRICES`) extends or overrides it, mapping a
model name to USD per million tokens:

    {"my-model": {"input": 3, "output": 15, "cache_write": 3.75, "cache_read": 0.3}}

`cache_write` prices the five-minute cache's writes, `cache_write_1h` the
one-hour cache's, `cache_read` the reads. A cache price left out is the
provider's documented multiple of `input` for the call's wire format: Anthropic
writes 1.25× (2× for an hour), reads 0.1×; an OpenAI-compatible server's cached
tokens at the input price itself, since their discount differs from model to
model (an upper bound, never an underestimate).

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

from ..errors import ConfigError
from ..usage import Limits, Usage

ENV = "TURNKEEPER_PRICES"
MILLION = 1_000_000

MULTIPLES: dict[str, tuple[float, float, float]] = {
    "anthropic": (1.25, 2.0, 0.1),
    "openai": (1.0, 1.0, 1.0),
    "openai-responses": (1.0, 1.0, 1.0),
}
"""Per wire format, a cache price left out as a multiple of `input`: (five-minute write,
one-hour write, read). Anthropic's are the same for every model; OpenAI's read discount
is not, and it charges no write on the models that report none."""


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens; a cache price of None is a multiple of `input` (`MULTIPLES`)."""

    input: float
    output: float
    cache_write: float | None = None
    cache_read: float | None = None
    cache_write_1h: float | None = None

    def cache_rates(self, wire: str) -> tuple[float, float, float]:
        """(five-minute write, one-hour write, read) in USD per million tokens on `wire`."""
        write, write_1h, read = MULTIPLES.get(wire, MULTIPLES["openai"])
        return (
            self.input * write if self.cache_write is None else self.cache_write,
            self.input * write_1h if self.cache_write_1h is None else self.cache_write_1h,
            self.input * read if self.cache_read is None else self.cache_read,
        )


# Published list prices, USD per million tokens (standard tier, prompts of 200k tokens
# or less). OpenAI does not charge for writing its cache: cache_write is the input price.
SHIPPED: dict[str, Price] = {
    "claude-opus-4-6": Price(5.0, 25.0, 6.25, 0.50),
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

    def cost(
        self, usage: Usage, model: str | None, wire: str = "anthropic", cache_ttl: str = "5m"
    ) -> float | None:
        """What `usage` cost with `model`'s price, or None if it has none: each kind of
        token at its price, the cache's at the wire's multiples where the price has none.
        Cache writes are at the TTL the request marked (`cache_ttl`: every mark has one)."""
        price = self.price(model)
        if price is None:
            return None
        write, write_1h, read = price.cache_rates(wire)
        dollars = (
            usage.input_tokens * price.input
            + usage.output_tokens * price.output
            + usage.cache_creation_input_tokens * (write_1h if cache_ttl == "1h" else write)
            + usage.cache_read_input_tokens * read
        ) / MILLION
        return round(dollars, 10)

    def priced(
        self, usage: Usage, model: str | None, wire: str = "anthropic", cache_ttl: str = "5m"
    ) -> Usage:
        """`usage` with its `cost_usd`, when `model` has a price."""
        cost = self.cost(usage, model, wire, cache_ttl)
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


FIELDS = ("input", "output", "cache_write", "cache_read", "cache_write_1h")
"""What a model's entry in a prices file may say, in USD per million tokens."""


def _price(path: str | Path, model: str, entry: Any) -> Price:
    """One model's price from the file; the cache prices it leaves out stay None."""
    if not isinstance(entry, dict) or not {"input", "output"} <= entry.keys():
        raise ConfigError(f"prices {path}: {model} needs at least input and output")
    unknown = set(entry) - set(FIELDS)
    if unknown:
        raise ConfigError(f"prices {path}: {model} has unknown fields {', '.join(sorted(unknown))}")
    for k, v in entry.items():
        if not isinstance(v, int | float) or isinstance(v, bool) or v < 0:
            raise ConfigError(f"prices {path}: {model}.{k} must be a number of zero or more")
    return Price(**{k: float(v) for k, v in entry.items()})


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


__all__ = [
    "ENV",
    "MULTIPLES",
    "SHIPPED",
    "Price",
    "PriceTable",
    "current",
    "load",
    "read_prices",
    "use",
]


def check_priced(limits: Limits | None, model: str | None) -> None:
    """`ConfigError` if `limits` caps a day's cost and `model` (when known) has no price:
    its calls would cost nothing the ledger could count."""
    if limits is None or limits.cost_per_day is None or model is None:
        return
    if current().price(model) is None:
        raise ConfigError(
            f"limits has cost_per_day, but the model {model!r} has no price: add it with "
            "--prices FILE (or TURNKEEPER_PRICES), or cap tokens_per_day instead"
        )
