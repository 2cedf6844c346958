"""`Compaction`: how a conversation is kept inside the model's context window.

A conversation's history is re-sent in full on every call, and grows with every
turn; a model's window does not. `Compaction` says when turnkeeper makes the
request smaller (`at` × `window`, estimated before every model call) and what it
keeps word for word (`keep_turns`). It is on by default (`Assistant(compaction=...)`;
`compaction=False` turns it off). What it does is `context.py`'s; the store keeps the
verbatim history whatever it does (docs/design.md §2, "Compaction").

The window comes from `WINDOWS`, a table of the known models, unless it is given. A
model the table does not know, with no window given, is compacted only when the
provider refuses a request for its size (and the refusal says the window: it is used
from then on in that turn).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ConfigError

STRATEGIES = ("summary", "server")
"""`summary`: turnkeeper's own, on every provider: clear old tool results, then summarise.
`server`: the provider's own where it has one (Anthropic's context management, its
`compaction` block and stop reason); turnkeeper's own where it has none, and on a refusal."""

WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude-", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("deepseek-", 128_000),
    ("mistral-large", 128_000),
    ("llama-3.1", 128_000),
    ("llama-3.3", 128_000),
    ("qwen2.5", 32_768),
    ("gemini-", 1_048_576),
)
"""Context windows in tokens of the known models, by the start of the model's name (the
first that matches wins; a provider's prefix such as `openai/` is ignored)."""


@dataclass(frozen=True, slots=True)
class Compaction:
    """When and how a conversation is compacted to stay within the model's context window.

    `window`: the model's context window in tokens (default: `WINDOWS`'s, by the model's
    name). `at`: the share of the window an estimated request may reach before it is
    compacted. `keep_turns`: how many turns before the current one are kept word for word
    (the current turn always is). `model`: the model that writes the summaries (default: the
    assistant's own). `strategy`: `"summary"`, turnkeeper's own, or `"server"`, the
    provider's (`STRATEGIES`). A window of 0 or less, an
    `at` outside (0, 1) or a negative `keep_turns` is a `ConfigError`."""

    window: int | None = None
    at: float = 0.75
    keep_turns: int = 2
    model: str | None = None
    strategy: str = "summary"

    def __post_init__(self) -> None:
        window, at, keep = self.window, self.at, self.keep_turns
        if window is not None and (_not_whole(window) or window <= 0):
            raise ConfigError(
                f"compaction's window must be a positive number of tokens, got {window!r}"
            )
        if isinstance(at, bool) or not (isinstance(at, int | float) and math.isfinite(at)):
            raise ConfigError(f"compaction's at must be a number between 0 and 1, got {at!r}")
        if not 0 < at < 1:
            raise ConfigError(f"compaction's at must be above 0 and below 1, got {at!r}")
        if _not_whole(keep) or keep < 0:
            raise ConfigError(f"compaction's keep_turns must be 0 or more, got {keep!r}")
        if self.model is not None and not (isinstance(self.model, str) and self.model.strip()):
            raise ConfigError(f"compaction's model must be a model's name, got {self.model!r}")
        if self.strategy not in STRATEGIES:
            known = ", ".join(STRATEGIES)
            raise ConfigError(
                f"compaction's strategy must be one of {known}, got {self.strategy!r}"
            )

    def window_for(self, model: object) -> int | None:
        """The window of `model` (the provider's, as it describes itself): the one given,
        else the table's, else None (unknown: compacted only when a request is refused)."""
        return self.window if self.window is not None else window_of(model)

    def as_dict(self) -> dict[str, object]:
        """The settings as a trace keeps them (a replay compacts the same)."""
        return {
            "window": self.window,
            "at": self.at,
            "keep_turns": self.keep_turns,
            "model": self.model,
            "strategy": self.strategy,
        }


def window_of(model: object) -> int | None:
    """The context window `WINDOWS` knows for `model`, or None."""
    if not isinstance(model, str):
        return None
    name = model.rpartition("/")[2].lower()
    return next((size for start, size in WINDOWS if name.startswith(start)), None)


def compaction_of(value: object) -> Compaction | None:
    """An assistant's `compaction` setting as the turn uses it: None when turned off (False);
    `ConfigError` for anything but a `Compaction`, True or False."""
    if value is False or value is None:
        return None
    if value is True:
        return Compaction()
    if not isinstance(value, Compaction):
        raise ConfigError(
            f"compaction must be a turnkeeper.Compaction or False, got {type(value).__name__}"
        )
    return value


def _not_whole(value: object) -> bool:
    return isinstance(value, bool) or not isinstance(value, int)


DEFAULT = Compaction()
"""The defaults: what every turn runs with unless told otherwise (on)."""
