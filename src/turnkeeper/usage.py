"""Token accounting, summed over a turn's model calls."""

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

    def add(self, other: Usage) -> None:
        self.iterations += other.iterations
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens
        self.web_search_requests += other.web_search_requests
        self.web_fetch_requests += other.web_fetch_requests

    def copy(self) -> Usage:
        return Usage(
            self.iterations,
            self.input_tokens,
            self.output_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
            self.web_search_requests,
            self.web_fetch_requests,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "iterations": self.iterations,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "web_search_requests": self.web_search_requests,
            "web_fetch_requests": self.web_fetch_requests,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        names = {f.name for f in fields(cls)}
        return cls(**{k: int(v) for k, v in data.items() if k in names})


def count(value: Any) -> int:
    """A token count from a provider's usage object; anything but a whole number is zero."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
