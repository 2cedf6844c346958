"""Captions: the table from tool names to past-tense keys, and adding your own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.scripts import answer, asks, tool_use
from turnkeeper import i18n
from turnkeeper.errors import ConfigError
from turnkeeper.providers.scripted import ScriptedProvider
from turnkeeper.tools.functions import FunctionToolset, tool
from turnkeeper.turn.activity import ACTIVITIES, caption, captions
from turnkeeper.turn.hooks import LocalHooks
from turnkeeper.turn.loop import run_turn
from turnkeeper.turn.setting import TurnSetting


@pytest.fixture(autouse=True)
def _fresh_catalogs() -> Iterator[None]:
    """Entries a test adds to the catalogs do not outlive it."""
    process = i18n.PROCESS
    added = {locale: dict(entries) for locale, entries in process._added.items()}
    yield
    i18n.PROCESS = i18n.Catalogs(added)


def test_built_in_tools_have_captions_in_every_locale() -> None:
    for key in set(ACTIVITIES.values()):
        assert i18n._shipped("en")[key]
        assert i18n._shipped("es")[key]


def test_unknown_tools_stay_silent() -> None:
    assert caption(("my_private_tool",), "activity.read_file", ACTIVITIES) is None
    assert caption((), "activity.read_file", ACTIVITIES) == "activity.read_file"


def test_captions_adds_keys_and_catalog_strings() -> None:
    table = captions(
        {
            "get_weather": {"en": "Checked the weather", "es": "Consultó el tiempo"},
            "fetch_page": {"en": "Fetched a page"},
            "search_docs": "activity.web_search",
        }
    )
    assert table["get_weather"] == "activity.get_weather"
    assert table["search_docs"] == "activity.web_search"
    assert table["read_file"] == "activity.read_file"
    assert "get_weather" not in ACTIVITIES, "the built-in table is left alone"
    assert i18n.resolve("activity.get_weather", "en") == "Checked the weather"
    assert i18n.resolve("activity.get_weather", "es") == "Consultó el tiempo"
    assert i18n.resolve("activity.fetch_page", "es") == "Fetched a page"
    assert caption(("get_weather",), None, table) == "activity.get_weather"


@pytest.mark.parametrize(
    ("entries", "why"),
    [
        ({"t": {"es": "Hizo algo"}}, "needs an 'en' text"),
        ({"t": {"en": "Did it", "français": "Fait"}}, "'français' is not a locale tag"),
        ({"t": {"en": "  "}}, "non-empty key and text"),
        ({"t": "errors.ai_failed"}, "must be an activity.* key"),
    ],
)
def test_bad_captions_are_config_errors(entries: dict[str, object], why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        captions(entries)  # type: ignore[arg-type]


async def test_a_turn_publishes_the_caption_of_your_own_tool() -> None:
    @tool
    def get_weather(city: str) -> str:
        return f"{city}: sunny"

    table = captions({"get_weather": {"en": "Checked the weather", "es": "Consultó el tiempo"}})
    hooks = LocalHooks()
    await run_turn(
        "weather?",
        provider=ScriptedProvider([asks(tool_use("get_weather", {"city": "Oslo"})), answer("sun")]),
        toolset=FunctionToolset([get_weather]),
        hooks=hooks,
        setting=TurnSetting(activities=table),
    )
    assert [s.activity for s in hooks.published] == [None, "activity.get_weather", None]
