"""turnkeeper: runs LLM agent turns the way production needs them run."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_PUBLIC = {
    "Assistant": ".assistant",
    "Bubble": ".state",
    "Budget": ".budget",
    "Card": ".cards",
    "CardError": ".cards",
    "Checkpoint": ".store.records",
    "Compaction": ".turn.compaction",
    "ConfigError": ".errors",
    "ContextTooLong": ".errors",
    "Hooks": ".turn.hooks",
    "Limits": ".usage",
    "LocalHooks": ".turn.hooks",
    "Outcome": ".outcomes",
    "ProviderError": ".errors",
    "ProviderFailed": ".errors",
    "ProviderUnavailable": ".errors",
    "PublishedState": ".state",
    "Reply": ".wire",
    "Report": ".observe.report",
    "ScriptExhausted": ".errors",
    "ScriptedProvider": ".providers.scripted",
    "Status": ".outcomes",
    "Stop": ".outcomes",
    "Tool": ".tools.functions",
    "ToolContext": ".tools.context",
    "ToolRefused": ".tools.functions",
    "ToolResult": ".wire",
    "ToolSpec": ".wire",
    "ToolUse": ".wire",
    "TurnError": ".errors",
    "TurnResult": ".turn.loop",
    "TurnSetting": ".turn.setting",
    "TurnkeeperError": ".errors",
    "Usage": ".usage",
    "decide": ".outcomes",
    "log_report": ".observe.report",
    "run_turn": ".turn.loop",
    "tool": ".tools.functions",
}
"""Each public name and the module it lives in, imported on first use (PEP 562)."""

if TYPE_CHECKING:
    from .assistant import Assistant
    from .budget import Budget
    from .cards import Card, CardError
    from .errors import (
        ConfigError,
        ContextTooLong,
        ProviderError,
        ProviderFailed,
        ProviderUnavailable,
        ScriptExhausted,
        TurnError,
        TurnkeeperError,
    )
    from .observe.report import Report, log_report
    from .outcomes import Outcome, Status, Stop, decide
    from .providers.scripted import ScriptedProvider
    from .state import Bubble, PublishedState
    from .store.records import Checkpoint
    from .tools.context import ToolContext
    from .tools.functions import Tool, ToolRefused, tool
    from .turn.compaction import Compaction
    from .turn.hooks import Hooks, LocalHooks
    from .turn.loop import TurnResult, run_turn
    from .turn.setting import TurnSetting
    from .usage import Limits, Usage
    from .wire import Reply, ToolResult, ToolSpec, ToolUse


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for; the package
    front loads nothing else, so importing a low floor (the store, say) never drags in
    the loop or a provider."""
    if name == "__version__":
        from importlib.metadata import version

        value: Any = version("turnkeeper")
    elif name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name], __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC, "__version__"])


__all__ = [
    "Assistant",
    "Bubble",
    "Budget",
    "Card",
    "CardError",
    "Checkpoint",
    "Compaction",
    "ConfigError",
    "ContextTooLong",
    "Hooks",
    "Limits",
    "LocalHooks",
    "Outcome",
    "ProviderError",
    "ProviderFailed",
    "ProviderUnavailable",
    "PublishedState",
    "Reply",
    "Report",
    "ScriptExhausted",
    "ScriptedProvider",
    "Status",
    "Stop",
    "Tool",
    "ToolContext",
    "ToolRefused",
    "ToolResult",
    "ToolSpec",
    "ToolUse",
    "TurnError",
    "TurnResult",
    "TurnSetting",
    "TurnkeeperError",
    "Usage",
    "decide",
    "log_report",
    "run_turn",
    "tool",
]
