"""turnkeeper: runs LLM agent turns the way production needs them run."""

from importlib.metadata import version as _version

from .assistant import Assistant
from .budget import Budget
from .cards import Card, CardError
from .errors import (
    ConfigError,
    ProviderError,
    ProviderFailed,
    ProviderUnavailable,
    ScriptExhausted,
    TurnError,
    TurnkeeperError,
)
from .hooks import Hooks, LocalHooks
from .loop import TurnResult, decide, run_turn
from .outcomes import Outcome, Status, Stop
from .providers.scripted import ScriptedProvider
from .records import Checkpoint
from .report import Report, log_report
from .state import Bubble, PublishedState
from .tools.context import ToolContext
from .tools.functions import Tool, ToolRefused, tool
from .usage import Usage
from .wire import Reply, ToolResult, ToolSpec, ToolUse

__version__ = _version("turnkeeper")
"""The installed version, from the package metadata (pyproject.toml)."""

__all__ = [
    "Assistant",
    "Bubble",
    "Budget",
    "Card",
    "CardError",
    "Checkpoint",
    "ConfigError",
    "Hooks",
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
    "TurnkeeperError",
    "Usage",
    "decide",
    "log_report",
    "run_turn",
    "tool",
]
