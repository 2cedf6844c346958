"""The contenders: each module has `make(spec) -> Turn`.

`make` builds whatever a real application builds once (agents, graphs,
clients); the `Turn` it returns runs one whole turn against the fake model.
Peers are imported only inside their module, so a worker loads one framework
and the parent process none.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# name: (module, label in the results)
CONTENDERS = {
    "bare": ("bare", "bare loop (baseline)"),
    "turnkeeper": ("turnkeeper_loop", "turnkeeper `run_turn`"),
    "turnkeeper-null": ("turnkeeper_null", "turnkeeper `run_turn`, hooks that keep nothing"),
    "turnkeeper-served": (
        "turnkeeper_served",
        "turnkeeper `run_turn`, hooks that keep nothing, `serve`'s GC policy",
    ),
    "turnkeeper-sync": ("turnkeeper_sync", "turnkeeper `run_turn`, sync tool"),
    "turnkeeper-scripted": ("turnkeeper_scripted", "turnkeeper `run_turn`, `ScriptedProvider`"),
    "pydantic-ai": ("pydanticai", "pydantic-ai `Agent.run`"),
    "openai-agents": ("openai_agents", "openai-agents `Runner.run`"),
    "langgraph": ("langgraph_react", "langgraph `create_react_agent`"),
    "anthropic-runner": ("anthropic_runner", "anthropic SDK tool runner"),
    "turnkeeper-anthropic": ("turnkeeper_wire", "turnkeeper `run_turn`, `AnthropicProvider`"),
    "turnkeeper-sqlite": ("turnkeeper_sqlite", "turnkeeper `TurnJob`, SQLite store"),
    "turnkeeper-postgres": ("turnkeeper_postgres", "turnkeeper `TurnJob`, PostgreSQL store"),
    "turnkeeper-cache": (
        "turnkeeper_cache",
        "turnkeeper `run_turn`, `AnthropicProvider` over HTTP",
    ),
    "pydantic-ai-anthropic": (
        "pydanticai_cache",
        "pydantic-ai `Agent.run`, `AnthropicModel` over HTTP",
    ),
    "turnkeeper-window": (
        "turnkeeper_window",
        "turnkeeper `TurnJob`, SQLite store, `AnthropicProvider` over HTTP",
    ),
    "pydantic-ai-window": (
        "pydanticai_window",
        "pydantic-ai `Agent.run`, `AnthropicModel` over HTTP",
    ),
    "openai-agents-window": (
        "openai_agents_window",
        "openai-agents `Runner.run`, `OpenAIChatCompletionsModel` over HTTP",
    ),
    "langgraph-window": (
        "langgraph_window",
        "langgraph `create_react_agent`, `ChatOpenAI` over HTTP",
    ),
}


def load(name: str) -> ModuleType:
    """The module of contender `name`."""
    return importlib.import_module(f"{__name__}.{CONTENDERS[name][0]}")


def label(name: str) -> str:
    return CONTENDERS[name][1]
