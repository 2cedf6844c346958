"""Token accounting, summed over a turn's model calls.

One meaning whatever the provider (Anthropic's): `input_tokens` are billed at
the input price; the prompt cache's writes (`cache_creation_input_tokens`) and
reads (`cache_read_input_tokens`) come on top of them. An OpenAI-compatible
server's `prompt_tokens` include its cached tokens: its adapter counts them out.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

# Written out rather than through dataclasses.asdict/fields: usage is summed and
# serialised on every iteration, and the generic helpers cost more than the loop.


@dataclass(slots=True)
class Usage:
    """What a turn (or one model call) cost. `iterations` counts model calls that returned."""

    iterations: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    web_search_requests: int = 0
    web_fetch_requests: int = 0
    cost_usd: float | None = None
    """What the calls cost in US dollars, when every priced call's model has a known price."""

    @property
    def prompt_tokens(self) -> int:
        """Every input token the calls sent: plain, written to the cache, read from it."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def add(self, other: Usage) -> None:
        """Add another call's (or turn's) usage to this one; the cost stays known only while
        every priced call's is."""
        self.cost_usd = _summed_cost(self, other)
        self.iterations += other.iterations
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens
        self.web_search_requests += other.web_search_requests
        self.web_fetch_requests += other.web_fetch_requests

    def copy(self) -> Usage:
        """An independent copy, to hand to the hooks or keep while this one goes on adding."""
        return Usage(
            self.iterations,
            self.input_tokens,
            self.output_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
            self.web_search_requests,
            self.web_fetch_requests,
            self.cost_usd,
        )

    def as_dict(self) -> dict[str, Any]:
        """The counts, and `cost_usd` only when it is known."""
        data: dict[str, Any] = {
            "iterations": self.iterations,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "web_search_requests": self.web_search_requests,
            "web_fetch_requests": self.web_fetch_requests,
        }
        if self.cost_usd is not None:
            data["cost_usd"] = self.cost_usd
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        """Read back what `as_dict()` wrote (a stored or published `usage`); unknown keys are
        ignored."""
        names = {f.name for f in fields(cls)} - {"cost_usd"}
        usage = cls(**{k: int(v) for k, v in data.items() if k in names})
        cost = data.get("cost_usd")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            usage.cost_usd = float(cost)
        return usage


def _summed_cost(total: Usage, more: Usage) -> float | None:
    """The cost of both: unknown as soon as a call that ran has no known price."""
    if total.iterations == 0 and total.cost_usd is None:
        return more.cost_usd
    if more.iterations == 0 and more.cost_usd is None:
        return total.cost_usd
    if total.cost_usd is None or more.cost_usd is None:
        return None
    return round(total.cost_usd + more.cost_usd, 10)


def count(value: Any) -> int:
    """A token count from a provider's usage object; anything but a whole number is zero."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
