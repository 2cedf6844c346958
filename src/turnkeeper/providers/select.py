"""Choosing the model a command runs on (ARCHITECTURE §6).

Names: `anthropic`, `openai`, `demo`. Without a name (nor `TURNKEEPER_PROVIDER`):
`ANTHROPIC_API_KEY` selects Anthropic, else `OPENAI_BASE_URL` selects an
OpenAI-compatible server, else the offline demo model. The model defaults to
`TURNKEEPER_MODEL`, then to the adapter's documented default
(`claude-sonnet-4-6`, `gpt-4.1-mini`). The SDKs' own variables configure them:
`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_BASE_URL`.
An SDK is imported only when its provider is chosen.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType

from ..errors import ConfigError, MissingExtra
from . import Provider
from .demo import DemoProvider

NAMES = ("anthropic", "openai", "demo")

LOCAL_SERVER_KEY = "not-needed"
"""The key sent to a server at OPENAI_BASE_URL when OPENAI_API_KEY is unset."""


def choose_provider(
    name: str | None, model: str | None, environ: Mapping[str, str], *, demo_pause: float = 0.0
) -> Provider:
    """The provider named (or chosen from `environ`), or `ConfigError` saying what is missing;
    the demo model takes `demo_pause` seconds per call."""
    name = name or environ.get("TURNKEEPER_PROVIDER") or _default_name(environ)
    model = model or environ.get("TURNKEEPER_MODEL") or None
    if name == "anthropic":
        return _anthropic(model, environ)
    if name == "openai":
        return _openai(model, environ)
    if name == "demo":
        return DemoProvider(pause=demo_pause)
    raise ConfigError(f"unknown provider {name!r}; choose one of: {', '.join(NAMES)}")


def _default_name(environ: Mapping[str, str]) -> str:
    if environ.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if environ.get("OPENAI_BASE_URL"):
        return "openai"
    return "demo"


def _anthropic(model: str | None, environ: Mapping[str, str]) -> Provider:
    key = environ.get("ANTHROPIC_API_KEY")
    if not key:
        raise ConfigError("ANTHROPIC_API_KEY is not set; export your Anthropic API key")
    adapter = _adapter("anthropic")
    provider: Provider = adapter.AnthropicProvider(
        model=model or adapter.DEFAULT_MODEL,
        api_key=key,
        base_url=environ.get("ANTHROPIC_BASE_URL") or None,
    )
    return provider


def _openai(model: str | None, environ: Mapping[str, str]) -> Provider:
    key = environ.get("OPENAI_API_KEY")
    base_url = environ.get("OPENAI_BASE_URL") or None
    if not key and not base_url:
        raise ConfigError(
            "OPENAI_API_KEY is not set; export your key, or OPENAI_BASE_URL for a local server"
        )
    adapter = _adapter("openai")
    provider: Provider = adapter.OpenAIProvider(
        model=model or adapter.DEFAULT_MODEL,
        api_key=key or LOCAL_SERVER_KEY,
        base_url=base_url,
    )
    return provider


def _adapter(sdk: str) -> ModuleType:
    """The adapter module for `sdk`, or `MissingExtra` if the SDK is not installed.

    The SDK is imported first, on its own: without the extra, the adapter's
    first import may be one of the SDK's dependencies (its HTTP client), whose
    name says nothing about the extra to install.
    """
    try:
        importlib.import_module(sdk)
    except ImportError as e:
        raise MissingExtra(f"the {sdk} provider", sdk) from e
    return importlib.import_module(f"{__package__}.{sdk}")
