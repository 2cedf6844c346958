"""`Assistant`: one value for an assistant, checked when it is made, loaded by import string;
`ToolContext` reaches the tools that ask for it; catalogs in any locale."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import turnkeeper
from tests.apps import orders
from tests.scripts import answer, asks, tool_use
from turnkeeper import Assistant, Budget, ConfigError, ToolContext, TurnSetting, tool
from turnkeeper.cli.loading import load
from turnkeeper.i18n import Catalogs, accepted, locale_from_env, locale_tag
from turnkeeper.providers.scripted import ScriptedProvider
from turnkeeper.tools.functions import FunctionToolset
from turnkeeper.turn.loop import run_turn
from turnkeeper.wire import ToolUse

APPS = Path(__file__).resolve().parent / "apps"


def test_the_public_names_are_importable_from_turnkeeper() -> None:
    for name in ("tool", "Tool", "Budget", "Assistant", "ToolContext"):
        assert name in turnkeeper.__all__
        assert getattr(turnkeeper, name) is not None


def lookup(query: str) -> str:
    return query


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"tools": [lookup], "captions": {"search": {"en": "Searched"}}}, "search"),
        ({"tools": [lookup, lookup]}, "two tools are named 'lookup'"),
        ({"tools": [lookup], "captions": {"lookup": {"english": "Looked"}}}, "'english'"),
        ({"messages": {"fr_FR!": {"ui.send": "Envoyer"}}}, "is not a locale tag"),
        ({"messages": {"fr": {"ui.send": " "}}}, "non-empty key and text"),
        ({"name": ""}, "name"),
        ({"provider": "gemini"}, "unknown provider 'gemini'"),
        ({"provider": 3}, "or a Provider, got 3"),
        ({"temperature": 3}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"thinking": 2048}, "max_tokens above it"),
        ({"thinking": 512, "max_tokens": 4096}, "at least 1024"),
        ({"budget": {"deadline": 5}}, "turnkeeper.Budget"),
        ({"tools": ["lookup"]}, "not a function, a tool or a toolset"),
        ({"tools": [lookup], "captions": {"lookup": "errors.ai_failed"}}, "activity.* key"),
    ],
)
def test_a_wrong_assistant_is_a_config_error_when_it_is_made(
    settings: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        Assistant(**settings)


def test_an_assistant_captions_its_tools_in_any_locale() -> None:
    a = orders.assistant
    assert a.activities["my_orders"] == "activity.my_orders"
    assert a.activities["read_file"] == "activity.read_file", "built-in captions stay"
    assert a.catalogs.locales == ("en", "es", "fr", "pt-BR")
    assert a.catalogs.resolve("activity.my_orders", "fr") == "A consulté vos commandes"
    assert a.catalogs.resolve("activity.order_status", "es") == "Checked an order", "en fallback"
    assert a.catalogs.resolve("ui.send", "pt-BR") == "Enviar"
    assert a.catalogs.resolve("notices.stopped", "pt-BR") == "Stopped.", "shipped en fallback"
    assert a.catalogs.resolve("notices.stopped", "es") == "Detenido."
    other = Assistant(tools=[lookup], captions={"lookup": {"en": "Looked", "fr": "A cherché"}})
    assert other.catalogs.resolve("activity.lookup", "fr") == "A cherché"
    assert orders.open_desk.catalogs.resolve("activity.my_orders", "fr") is not None
    assert turnkeeper.i18n.resolve("activity.my_orders", "fr") is None, "no process-wide leak"


@pytest.mark.parametrize(
    ("wanted", "chosen"),
    [
        (["pt-BR"], "pt-BR"),
        (["pt-br"], "pt-BR"),
        (["fr-CA", "es"], "fr"),
        (["de-DE", "es-MX"], "es"),
        (["en-US", "fr"], "en"),
        (["de"], "en"),
        (["not a tag", "fr"], "fr"),
        ([], "en"),
    ],
)
def test_negotiation_tries_each_tag_then_its_shorter_forms_then_english(
    wanted: list[str], chosen: str
) -> None:
    assert orders.assistant.catalogs.negotiate(wanted) == chosen


def test_pt_falls_back_to_pt_then_en() -> None:
    catalogs = Catalogs(
        {"pt": {"ui.send": "Enviar", "ui.stop": "Parar"}, "pt-BR": {"ui.stop": "Pare"}}
    )
    assert catalogs.negotiate(["pt-PT"]) == "pt"
    assert catalogs.resolve("ui.stop", "pt-BR") == "Pare"
    assert catalogs.resolve("ui.send", "pt-BR") == "Enviar"
    assert catalogs.resolve("ui.working", "pt-BR") == "Working…"


def test_locale_tags_are_canonical_bcp_47() -> None:
    assert [locale_tag(t) for t in ("PT_br", "zh-hant-tw", "es-419", "FR")] == [
        "pt-BR",
        "zh-Hant-TW",
        "es-419",
        "fr",
    ]
    for bad in ("", "f", "english", "fr-", "fr--FR", 7):
        with pytest.raises(ConfigError):
            locale_tag(bad)


def test_accept_language_is_read_by_weight() -> None:
    assert accepted("fr-CA;q=0.5, de;q=0.9, *;q=0.1, es") == ["es", "de", "fr-CA"]
    assert accepted("") == []


def test_the_cli_negotiates_its_locale_from_the_environment() -> None:
    catalogs = orders.assistant.catalogs
    assert locale_from_env({"LANG": "fr_FR.UTF-8"}, catalogs) == "fr"
    assert locale_from_env({"LC_ALL": "pt_BR.UTF-8", "LANG": "fr_FR"}, catalogs) == "pt-BR"
    assert locale_from_env({"LANG": "de_DE.UTF-8"}, catalogs) == "en"
    assert locale_from_env({"LANG": "C"}) == "en"
    assert locale_from_env({"LANG": "es_ES.UTF-8"}) == "es"


# ---- the model settings reach every request --------------------------------------


def test_instructions_and_settings_reach_every_anthropic_request() -> None:
    provider = orders.assistant.choose_provider(
        {"ANTHROPIC_API_KEY": "sk-test"}, provider="anthropic"
    )
    params = provider.request([], [], 10.0)  # type: ignore[attr-defined]
    assert params["system"] == [
        {"type": "text", "text": orders.INSTRUCTIONS, "cache_control": {"type": "ephemeral"}}
    ]
    assert params["max_tokens"] == 2048
    assert params["extra_body"] == {"temperature": 0.2}
    thinking = orders.thinking.choose_provider({"ANTHROPIC_API_KEY": "k"}, provider="anthropic")
    params = thinking.request([], [], 10.0)  # type: ignore[attr-defined]
    assert params["extra_body"] == {"thinking": {"type": "enabled", "budget_tokens": 2048}}


def test_a_provider_of_ones_own_is_used_as_it_is_unless_the_command_line_names_one() -> None:
    own = ScriptedProvider([answer("hi")])
    assert Assistant(provider=own).choose_provider({}) is own
    assert Assistant(provider=own).choose_provider({}, provider="demo") is not own


def test_instructions_and_settings_reach_every_openai_request() -> None:
    environ = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    provider = orders.assistant.choose_provider(environ, provider="openai", model="local")
    params = provider.request([{"role": "user", "content": "hi"}], [], 10.0)  # type: ignore[attr-defined]
    assert params["messages"][0] == {"role": "system", "content": orders.INSTRUCTIONS}
    assert (params["model"], params["max_tokens"]) == ("local", 2048)
    assert params["extra_body"] == {"temperature": 0.2}
    with pytest.raises(ConfigError, match="Anthropic setting"):
        orders.thinking.choose_provider(environ, provider="openai")


def test_calls_stream_unless_the_assistant_says_stream_false() -> None:
    environ = {"ANTHROPIC_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    for name in ("anthropic", "openai"):
        streaming = Assistant().choose_provider(environ, provider=name)
        plain = Assistant(stream=False).choose_provider(environ, provider=name)
        assert streaming.request(QUESTION, [], 10.0)["stream"] is True  # type: ignore[attr-defined]
        assert "stream" not in plain.request(QUESTION, [], 10.0)  # type: ignore[attr-defined]
        assert (streaming.describe()["stream"], plain.describe()["stream"]) == (True, False)


QUESTION = [{"role": "user", "content": "hi"}]


# ---- ToolContext -----------------------------------------------------------------


def test_the_context_parameter_is_not_in_the_schema() -> None:
    [spec] = FunctionToolset([orders.order_status]).specs()
    assert list(spec.input_schema["properties"]) == ["order_id"]
    assert spec.input_schema["required"] == ["order_id"]
    [spec] = Assistant(tools=[orders.my_orders])._functions.specs()
    assert spec.input_schema["properties"] == {}


def test_a_context_parameter_that_is_not_first_is_a_config_error() -> None:
    def late(query: str, ctx: ToolContext) -> str:
        return query

    with pytest.raises(ConfigError, match="must come first"):
        tool(late)


async def test_sync_and_async_tools_get_the_turns_context() -> None:
    provider = ScriptedProvider(
        [
            asks(tool_use("my_orders", {}), tool_use("order_status", {"order_id": "o-1"})),
            answer("done"),
        ]
    )
    setting = TurnSetting(turn_id="t_1", conversation_id="c_1", user="ada", locale="fr")
    result = await run_turn(
        "my orders?",
        provider=provider,
        toolset=orders.assistant.toolset(),
        setting=setting,
    )
    results = [b["content"] for b in result.history[2]["content"]]
    assert json.loads(results[0]) == {
        "user": "ada",
        "locale": "fr",
        "conversation_id": "c_1",
        "turn_id": "t_1",
        "orders": ["o-1 teapot", "o-2 kettle"],
    }
    assert results[1] == "o-1: shipped"


async def test_without_a_context_a_turn_gives_its_own_ids_and_no_user() -> None:
    provider = ScriptedProvider([asks(tool_use("my_orders", {})), answer("done")])
    result = await run_turn(
        "q",
        provider=provider,
        toolset=orders.assistant.toolset(),
        setting=TurnSetting(turn_id="t_9"),
    )
    given = json.loads(result.history[2]["content"][0]["content"])
    assert (given["user"], given["locale"], given["turn_id"]) == (None, "en", "t_9")


async def test_a_toolset_called_outside_a_turn_gives_a_local_context() -> None:
    found = await FunctionToolset([orders.my_orders]).call(ToolUse("u1", "my_orders", {}), 5)
    assert json.loads(found.content)["user"] is None


# ---- loading by import string ----------------------------------------------------


@pytest.fixture
def apps_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in ("orders", "broken", "wrong_caption", "needs_missing"):
        monkeypatch.delitem(sys.modules, name, raising=False)


@pytest.mark.usefixtures("apps_importable")
def test_an_app_is_loaded_as_uvicorn_loads_one() -> None:
    loaded = load("orders:assistant", APPS)
    assert loaded.name == "Order desk"
    assert load("orders:open_desk", APPS).authenticate is None


@pytest.mark.usefixtures("apps_importable")
@pytest.mark.parametrize(
    ("app", "says"),
    [
        ("orders", "must be written module:attribute"),
        ("orders:", "must be written module:attribute"),
        (":assistant", "must be written module:attribute"),
        ("no_such_module:assistant", "no module named 'no_such_module'"),
        ("orders:nobody", "has no attribute 'nobody'"),
        ("orders:not_an_assistant", "is a int, not a turnkeeper.Assistant"),
        ("broken:assistant", "NameError: name 'undefined_tool' is not defined (/"),
        ("wrong_caption:assistant", "captions for tools it does not have: search"),
        ("needs_missing:assistant", "No module named 'turnkeeper_no_such_package'"),
    ],
)
def test_a_bad_app_is_one_config_error_naming_what_is_wrong(app: str, says: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load(app, APPS)
    assert says in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_budget_is_the_assistants_own() -> None:
    assert orders.assistant.budget == Budget(max_iterations=4)


def test_tool_flags_and_names_say_which_tools_wait_and_which_may_run_again() -> None:
    @tool(needs_approval=True)
    def delete_file(path: str) -> str:
        return path

    @tool(idempotent=True, timeout=5)
    def look_up(query: str) -> str:
        return query

    assert (delete_file.needs_approval, delete_file.idempotent) == (True, False)
    assert (look_up.needs_approval, look_up.idempotent, look_up.timeout) == (False, True, 5)
    plain = Assistant(tools=[delete_file, look_up, lookup])
    assert plain.resuming.needs_approval == {"delete_file"}
    assert plain.resuming.idempotent == {"look_up"}
    assert (plain.resume_after_crash, plain.max_resumes) == (False, 2)
    assert plain.approval_timeout == 24 * 3600
    named = Assistant(
        tools=[delete_file, look_up, lookup],
        needs_approval=["lookup"],
        idempotent=["lookup"],
        resume_after_crash=True,
        approval_timeout=60,
    )
    assert named.resuming.needs_approval == {"delete_file", "lookup"}
    assert named.resuming.idempotent == {"look_up", "lookup"}
    assert (named.resuming.resume_after_crash, named.resuming.approval_timeout) == (True, 60)


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"needs_approval": "lookup"}, "needs_approval must be a list of tool names"),
        ({"needs_approval": ["serach"]}, "needs_approval for tools it does not have: serach"),
        ({"idempotent": ["nope"]}, "idempotent for tools it does not have: nope"),
        ({"max_resumes": -1}, "max_resumes must be a whole number"),
        ({"approval_timeout": 0}, "approval_timeout must be a positive number"),
    ],
)
def test_wrong_waiting_settings_are_config_errors(settings: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        Assistant(tools=[lookup], **settings)
