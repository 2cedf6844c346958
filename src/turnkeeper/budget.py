"""The two caps of a turn, the clocks that nest inside them, and the clock a turn reads.

Clocks nest: per-call timeout < turn deadline < job timeout. The per-call
timeout is derived from what remains, and a call there is no time to finish is
never started.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from .errors import ConfigError

Clock = Callable[[], float]
"""Monotonic seconds; injected so tests and replay control time."""

monotonic: Clock = time.monotonic

DEFAULT_MAX_ITERATIONS = 10
DEFAULT_DEADLINE = 180.0


@dataclass(frozen=True, slots=True)
class Budget:
    """Caps and clock settings for one turn, in seconds where a duration."""

    max_iterations: int = DEFAULT_MAX_ITERATIONS
    """The most model calls that return a response; reaching it ends the turn `iteration_limit`."""
    deadline: float = DEFAULT_DEADLINE
    """The turn's wall-clock budget from its start; reaching it ends the turn `time_limit`."""
    call_timeout: float = 120.0
    """The most one model call may take, whatever remains."""
    margin: float = 1.0
    """Kept back from the remaining time so the turn can still finalise."""
    min_call: float = 2.0
    """A model call is refused when less than this would be left for it."""
    tool_timeout: float = 60.0
    """The most one round of tool calls may take, whatever remains (a tool may set less)."""

    def __post_init__(self) -> None:
        if isinstance(self.max_iterations, bool) or self.max_iterations < 1:
            raise ConfigError(f"max_iterations must be at least 1, got {self.max_iterations!r}")
        for name in ("deadline", "call_timeout", "tool_timeout"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}")
        for name in ("margin", "min_call"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name} must be zero or more seconds, got {value!r}")

    def timeout_for_call(self, remaining: float) -> float | None:
        """The per-call timeout for a call started now, or None if there is no time for one."""
        timeout = min(self.call_timeout, remaining - self.margin)
        return timeout if timeout >= self.min_call and timeout > 0 else None

    def timeout_for_tools(self, remaining: float) -> float | None:
        """The timeout for a round of tool calls, or None if the deadline has passed."""
        timeout = min(self.tool_timeout, remaining - self.margin)
        return timeout if timeout > 0 else None

    def as_dict(self) -> dict[str, float]:
        """The settings as JSON, as the trace records them (replay runs under the same budget)."""
        return {
            "max_iterations": self.max_iterations,
            "deadline": self.deadline,
            "call_timeout": self.call_timeout,
            "margin": self.margin,
            "min_call": self.min_call,
            "tool_timeout": self.tool_timeout,
        }
