"""Choosing the model a command runs on (docs/design.md §6).

Names: `anthropic`, `openai`, `openai-responses`, `demo`, `dev`. Without a name (nor
`TURNKEEPER_PROVIDER`): `ANTHROPIC_API_KEY` selects Anthropic, else `OPENAI_BASE_URL` selects an
OpenAI-compatible server, else the offline demo model. `dev` is only ever named: the
offline model that calls an assistant's own tools (dev.py), at `dev_pace` words a
second (else `TURNKEEPER_DEV_PACE`, else ~30); a served demo streams at that pace too.
The model defaults to `TURNKEEPER_MODEL`, then to the adapter's documented default
(`claude-sonnet-4-6`, `gpt-4.1-mini`, `gpt-5-mini` for the Responses API). The SDKs' own
variables configure them:
`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_BASE_URL`.
An SDK is imported only when its provider is chosen.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..errors import ConfigError, MissingExtra
from . import MAX_RESPONSE, Provider
from .demo import DemoProvider, Where
from .dev import PACE, DevProvider

NAMES = ("anthropic", "openai", "openai-responses", "demo", "dev")

OFFLINE = {
    "demo": (
        "demo (offline; ANTHROPIC_API_KEY or OPENAI_BASE_URL selects a real model)",
        "demo (offline; answers the todo-list question from the demo folder)",
    ),
    "dev": ("dev (offline; calls each tool with sample input, {pace:g} words/s)",) * 2,
}
"""What a serving process's banner says of an offline model, by its `describe()`'s name:
for an application's assistant, then for the demo assistant (`{…}`: from `describe()`)."""

FALLBACK_BETA = "server-side-fallback-2026-06-01"
"""The Anthropic beta that lets a request name `fallbacks` (docs: "Refusals and fallback")."""

LOCAL_SERVER_KEY = "not-needed"
"""The key sent to a server at OPENAI_BASE_URL when OPENAI_API_KEY is unset."""


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """What every request of an assistant's model carries besides the history and tools."""

    system: str | None = None
    """The instructions (system prompt), sent on every call."""
    max_tokens: int | None = None
    """The most tokens a response may have (default: the adapter's)."""
    temperature: float | None = None
    thinking: int | None = None
    """Extended thinking's budget in tokens (Anthropic), or None for none."""
    prompt_cache: bool | str = True
    """Mark the prompt cache on every Anthropic request: True ("5m"), "1h", or False.
    OpenAI-compatible servers cache long prefixes by themselves: nothing is sent to them."""
    stream: bool = True
    """Stream every call (both SDK adapters); False makes plain calls."""
    max_response: int = MAX_RESPONSE
    """The most content one response may hold, in bytes; a larger one fails the turn."""
    fallbacks: str | tuple[str, ...] | None = None
    """The models Anthropic's API may hand a refused request to (`"default"`: its own
    choice), sent as the request's `fallbacks` with the beta that enables them."""

    def anthropic(self) -> dict[str, Any]:
        """The keyword arguments of `AnthropicProvider` these settings give."""
        extra: dict[str, Any] = {}
        if self.temperature is not None:
            extra["temperature"] = self.temperature
        if self.thinking is not None:
            extra["thinking"] = {"type": "enabled", "budget_tokens": self.thinking}
        if self.fallbacks is not None:
            extra["fallbacks"] = _fallbacks(self.fallbacks)
        given: dict[str, Any] = {"system": self.system, "max_tokens": self.max_tokens}
        given |= {"extra_body": extra}
        if self.fallbacks is not None:
            given["betas"] = [FALLBACK_BETA]
        chosen = {
            "prompt_cache": self.prompt_cache,
            "stream": self.stream,
            "max_response": self.max_response,
        }
        return {k: v for k, v in given.items() if v} | chosen

    def openai(self) -> dict[str, Any]:
        """The keyword arguments of `OpenAIProvider`; extended thinking is Anthropic's."""
        for name in ("thinking", "fallbacks"):
            if getattr(self, name) is not None:
                raise ConfigError(
                    f"{name}=… is an Anthropic setting; the OpenAI providers cannot send it"
                )
        extra = {} if self.temperature is None else {"temperature": self.temperature}
        given = {"system": self.system, "max_tokens": self.max_tokens, "extra_body": extra}
        chosen = {"stream": self.stream, "max_response": self.max_response}
        return {k: v for k, v in given.items() if v} | chosen

    def openai_responses(self) -> dict[str, Any]:
        """The keyword arguments of `OpenAIResponsesProvider`: the Chat Completions ones, and
        whether to send a `prompt_cache_key`."""
        return self.openai() | {"prompt_cache": self.prompt_cache}


def _fallbacks(given: str | tuple[str, ...]) -> str | list[dict[str, str]]:
    """`fallbacks` as the request sends it: `"default"`, or one `{"model": …}` per model."""
    return given if isinstance(given, str) else [{"model": m} for m in given]


def choose_provider(
    name: str | None,
    model: str | None,
    environ: Mapping[str, str],
    *,
    demo_pause: float = 0.0,
    demo_where: Where = Where.APP,
    settings: ModelSettings = ModelSettings(),
    dev_pace: float | None = None,
) -> Provider:
    """The provider named (or chosen from `environ`), or `ConfigError` saying what is missing;
    every request carries `settings`; the demo model takes `demo_pause` seconds per call and
    says how to select a real model where it runs (`demo_where`). The dev model streams at
    `dev_pace` words a second (`pace_of`), and so does a demo model that pauses."""
    name = name or environ.get("TURNKEEPER_PROVIDER") or _default_name(environ)
    model = model or environ.get("TURNKEEPER_MODEL") or None
    if name == "anthropic":
        return _anthropic(model, environ, settings)
    if name == "openai":
        return _openai(model, environ, settings)
    if name == "openai-responses":
        return _openai(model, environ, settings, responses=True)
    if name == "demo":
        gap = 1 / pace_of(dev_pace, environ) if demo_pause > 0 else 0.0
        return DemoProvider(pause=demo_pause, gap=gap, where=demo_where)
    if name == "dev":
        return DevProvider(pace=pace_of(dev_pace, environ))
    raise ConfigError(f"unknown provider {name!r}; choose one of: {', '.join(NAMES)}")


def pace_of(given: float | None, environ: Mapping[str, str]) -> float:
    """Words per second the offline models stream at: `given`, else `TURNKEEPER_DEV_PACE`,
    else `dev.PACE`; `ConfigError` if that is not a positive number."""
    if given is not None:
        return given
    text = environ.get("TURNKEEPER_DEV_PACE") or ""
    if not text:
        return PACE
    try:
        pace = float(text)
    except ValueError:
        pace = math.nan
    if not (math.isfinite(pace) and pace > 0):
        raise ConfigError(f"TURNKEEPER_DEV_PACE must be words per second (above 0), got {text!r}")
    return pace


def _default_name(environ: Mapping[str, str]) -> str:
    if environ.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if environ.get("OPENAI_BASE_URL"):
        return "openai"
    return "demo"


def _anthropic(model: str | None, environ: Mapping[str, str], settings: ModelSettings) -> Provider:
    key = environ.get("ANTHROPIC_API_KEY")
    if not key:
        raise ConfigError("ANTHROPIC_API_KEY is not set; export your Anthropic API key")
    adapter = _adapter("anthropic")
    provider: Provider = adapter.AnthropicProvider(
        model=model or adapter.DEFAULT_MODEL,
        api_key=key,
        base_url=environ.get("ANTHROPIC_BASE_URL") or None,
        **settings.anthropic(),
    )
    return provider


def _openai(
    model: str | None, environ: Mapping[str, str], settings: ModelSettings, responses: bool = False
) -> Provider:
    """The Chat Completions provider, or with `responses` the Responses API one."""
    key = environ.get("OPENAI_API_KEY")
    base_url = environ.get("OPENAI_BASE_URL") or None
    if not key and not base_url:
        raise ConfigError(
            "OPENAI_API_KEY is not set; export your key, or OPENAI_BASE_URL for a local server"
        )
    adapter = _adapter("openai", "openai_responses" if responses else "openai")
    kind = adapter.OpenAIResponsesProvider if responses else adapter.OpenAIProvider
    given = settings.openai_responses() if responses else settings.openai()
    provider: Provider = kind(
        model=model or adapter.DEFAULT_MODEL,
        api_key=key or LOCAL_SERVER_KEY,
        base_url=base_url,
        **given,
    )
    return provider


def _adapter(sdk: str, module: str | None = None) -> ModuleType:
    """The adapter module for `sdk` (`module`, else the SDK's name), or `MissingExtra` if the
    SDK is not installed.

    The SDK is imported first, on its own: without the extra, the adapter's
    first import may be one of the SDK's dependencies (its HTTP client), whose
    name says nothing about the extra to install.
    """
    try:
        importlib.import_module(sdk)
    except ImportError as e:
        raise MissingExtra(f"the {sdk} provider", sdk) from e
    return importlib.import_module(f"{__package__}.{module or sdk}")
