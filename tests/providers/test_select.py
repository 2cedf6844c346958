"""Choosing the provider from a name, a model and the environment (docs/design.md §6)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Mapping

import pytest

from turnkeeper.errors import ConfigError
from turnkeeper.providers import Provider
from turnkeeper.providers.anthropic import AnthropicProvider
from turnkeeper.providers.demo import DemoProvider
from turnkeeper.providers.openai import OpenAIProvider
from turnkeeper.providers.select import choose_provider

chosen: list[Provider] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    while chosen:
        provider = chosen.pop()
        if hasattr(provider, "aclose"):
            await provider.aclose()


def choose(name: str | None, model: str | None, environ: Mapping[str, str]) -> Provider:
    chosen.append(choose_provider(name, model, environ))
    return chosen[-1]


@pytest.mark.parametrize(
    ("environ", "kind"),
    [
        ({"ANTHROPIC_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, AnthropicProvider),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, OpenAIProvider),
        ({"OPENAI_API_KEY": "k"}, DemoProvider),
        ({}, DemoProvider),
        ({"TURNKEEPER_PROVIDER": "openai", "OPENAI_API_KEY": "k"}, OpenAIProvider),
    ],
)
def test_without_a_name_the_environment_decides(environ: dict[str, str], kind: type) -> None:
    assert isinstance(choose(None, None, environ), kind)


def test_names_models_and_base_urls_are_honoured() -> None:
    anthropic = choose(
        "anthropic",
        "claude-x",
        {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
    )
    assert anthropic.describe()["model"] == "claude-x"
    assert anthropic.describe()["base_url"].startswith("http://127.0.0.1:9")
    local = choose(
        "openai", None, {"OPENAI_BASE_URL": "http://127.0.0.1:8/v1", "TURNKEEPER_MODEL": "qwen"}
    )
    assert local.describe()["model"] == "qwen"
    assert local.wire.name == "openai"
    assert choose("openai", None, {"OPENAI_API_KEY": "k"}).describe()["model"] == "gpt-4.1-mini"
    assert (
        choose("anthropic", None, {"ANTHROPIC_API_KEY": "k"}).describe()["model"]
        == "claude-sonnet-4-6"
    )
    assert isinstance(choose("demo", None, {"ANTHROPIC_API_KEY": "k"}), DemoProvider)


@pytest.mark.parametrize(
    ("name", "environ", "message"),
    [
        ("anthropic", {"OPENAI_API_KEY": "k"}, "ANTHROPIC_API_KEY is not set"),
        ("openai", {"ANTHROPIC_API_KEY": "k"}, "OPENAI_API_KEY is not set"),
        ("gemini", {}, "unknown provider 'gemini'"),
    ],
)
def test_what_is_missing_is_one_clear_line(
    name: str, environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        choose_provider(name, None, environ)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("sdk", ["anthropic", "openai"])
def test_a_missing_sdk_gives_the_install_hint(monkeypatch: pytest.MonkeyPatch, sdk: str) -> None:
    monkeypatch.setitem(
        sys.modules, sdk, None
    )  # what `import` sees when the extra is not installed
    monkeypatch.delitem(sys.modules, f"turnkeeper.providers.{sdk}")
    environ = {"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}
    with pytest.raises(ConfigError, match=rf"pip install -e '\.\[{sdk}\]'"):
        choose_provider(sdk, None, environ)


def test_openai_responses_is_chosen_by_name_with_openai_base_url() -> None:
    from turnkeeper.providers.openai_responses import OpenAIResponsesProvider
    from turnkeeper.providers.select import ModelSettings

    local = choose("openai-responses", None, {"OPENAI_BASE_URL": "http://127.0.0.1:8/v1"})
    assert isinstance(local, OpenAIResponsesProvider)
    assert local.wire.name == "openai-responses"
    assert local.describe()["model"] == "gpt-5-mini"
    assert local.describe()["base_url"].startswith("http://127.0.0.1:8/v1")
    settings = ModelSettings(system="s", max_tokens=50, temperature=0.5, prompt_cache=False)
    made = choose_provider("openai-responses", "gpt-5", {"OPENAI_API_KEY": "k"}, settings=settings)
    chosen.append(made)
    sent = made.request([{"role": "user", "content": "q"}], [], 5)  # type: ignore[attr-defined]
    assert (sent["model"], sent["instructions"], sent["max_output_tokens"]) == ("gpt-5", "s", 50)
    assert sent["extra_body"] == {"temperature": 0.5}
    assert "prompt_cache_key" not in sent
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        choose_provider("openai-responses", None, {})
