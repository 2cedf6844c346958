"""Complete catalogs: every key documented from the catalog itself, an unknown key or a
caption without English refused when the assistant is made, a locale's missing keys
reported and shown in English, the assistant's name per locale, and `trace show` resolving
an application's captions."""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from turnkeeper import Assistant, ConfigError
from turnkeeper.cli import main
from turnkeeper.i18n import SHIPPED, Catalogs, _shipped, keys, markdown

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("keys_script", ROOT / "scripts" / "keys.py")
assert _spec is not None
assert _spec.loader is not None
keys_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(keys_script)
BEGIN, END, with_keys = keys_script.BEGIN, keys_script.END, keys_script.with_keys


def lookup(query: str) -> str:
    return query


def my_notes(topic: str) -> str:
    return topic


def test_the_designs_key_table_is_what_the_catalog_generates() -> None:
    design = (ROOT / "docs" / "design.md").read_text("utf-8")
    section = design[design.index("## 7. Message keys") : design.index("## 8.")]
    block = section.partition(BEGIN)[2].partition(END)[0]
    assert block == markdown(), "run: python scripts/keys.py"
    for key, text in keys().items():
        assert f"| `{key}` | {text} |" in block
    assert with_keys(design) == design
    stale = design.replace("| `ui.deny` | Deny |", "| `ui.deny` | No |")
    assert with_keys(stale) == design, "the script rewrites a stale block"


def test_every_shipped_catalog_has_every_english_key() -> None:
    for locale in SHIPPED:
        assert set(_shipped(locale)) == set(keys()), locale


def test_the_readme_points_to_the_keys_instead_of_listing_a_few() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    assert "docs/design.md §7](docs/design.md#7-message-keys) lists" in readme


def test_an_unknown_key_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"ui\.sendd"):
        Assistant(messages={"de": {"ui.send": "Senden", "ui.sendd": "Senden"}})
    with pytest.raises(ConfigError, match=r"activity\.lookup"):
        Assistant(tools=[lookup], messages={"de": {"activity.lookup": "Gesucht"}})


def test_a_captions_key_is_known_to_the_messages() -> None:
    a = Assistant(
        tools=[my_notes],
        captions={"my_notes": {"en": "Read your notes"}},
        messages={"de": {"activity.my_notes": "Hat Ihre Notizen gelesen"}},
    )
    assert a.catalogs.resolve("activity.my_notes", "de") == "Hat Ihre Notizen gelesen"
    assert a.catalogs.resolve("activity.read_file", "de") == "Read a file"


def test_a_caption_without_english_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"'lookup' needs an 'en' text"):
        Assistant(tools=[lookup], captions={"lookup": {"fr": "A cherché"}})
    with pytest.raises(ConfigError, match="existing activity"):
        Assistant(tools=[lookup], captions={"lookup": "activity.web_serch"})


def test_a_locale_missing_keys_is_one_warning_and_english_shows(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="turnkeeper"):
        a = Assistant(messages={"de": {"ui.send": "Senden", "ui.stop": "Anhalten"}})
    lines = [r.getMessage() for r in caplog.records if r.name == "turnkeeper"]
    assert len(lines) == 1, lines
    lacking = len(keys()) - 2
    assert f"de lacks {lacking} keys" in lines[0], "how many, not a list of them"
    assert "ui.approve" not in lines[0]
    assert "`turnkeeper messages --locale de APP`" in lines[0], "the command that helps"
    assert "es lacks" not in lines[0], "es ships complete"
    assert a.catalogs.resolve("ui.approve", "de") == "Approve"
    assert a.catalogs.resolve("ui.send", "de") == "Senden"


def test_a_complete_locale_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="turnkeeper"):
        Assistant(messages={"de": {key: f"[de] {text}" for key, text in keys().items()}})
    assert [r for r in caplog.records if r.name == "turnkeeper"] == []


def test_the_widgets_catalog_falls_back_to_english_for_missing_keys() -> None:
    from starlette.applications import Starlette

    from turnkeeper.api.widget import routes

    a = Assistant(messages={"de": {"ui.send": "Senden"}})
    with TestClient(Starlette(routes=routes(a.name, a.catalogs))) as client:
        de = client.get("/locales/de.json").json()
    assert de["ui.send"] == "Senden"
    assert de["ui.approve"] == "Approve"
    assert set(de) == set(keys())


def test_the_name_per_locale() -> None:
    default = Assistant()
    assert default.catalogs.resolve("assistant.name", "es") == "Asistente"
    assert default.catalogs.resolve("assistant.name", "en") == "Assistant"
    named = Assistant(name="Shop helper", messages={"es": {"assistant.name": "Ayudante"}})
    assert named.catalogs.resolve("assistant.name", "es") == "Ayudante"
    assert named.catalogs.resolve("assistant.name", "es-MX") == "Ayudante"
    assert named.catalogs.resolve("assistant.name", "en") == "Shop helper"
    plain = Assistant(name="Shop helper", captions={})
    assert plain.catalogs.resolve("assistant.name", "es") == "Shop helper", (
        "a named assistant is not called 'Asistente'"
    )


def test_the_widget_shows_the_name_of_the_readers_locale() -> None:
    loading = (ROOT / "src/turnkeeper/web/widget/catalogs.js").read_text("utf-8")
    assert 'catalog.text("assistant.name")' in loading
    assert json.loads((ROOT / "src/turnkeeper/locales/es.json").read_text())["assistant.name"]


def test_messages_prints_a_locale_to_translate_with_the_apps_captions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 44: `turnkeeper messages --locale fr APP`: every key, the locale's own text
    where it has one, English where not; `--missing` only those."""
    (tmp_path / "notes_app.py").write_text(
        "from turnkeeper import Assistant\n"
        "def my_notes() -> str:\n"
        '    """The notes."""\n'
        "    return ''\n"
        "assistant = Assistant(tools=[my_notes],"
        " captions={'my_notes': {'en': 'Read your notes', 'fr': 'A lu vos notes'}},"
        " messages={'fr': {'ui.send': 'Envoyer'}})\n"
    )
    app = ["notes_app:assistant", "--app-dir", str(tmp_path)]
    assert main(["messages", "--locale", "fr", *app]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert list(printed) == sorted(printed)
    assert set(printed) == set(keys()) | {"activity.my_notes"}, "every key, captions too"
    assert printed["ui.send"] == "Envoyer"
    assert printed["activity.my_notes"] == "A lu vos notes"
    assert printed["ui.stop"] == keys()["ui.stop"], "English where fr has none"
    assert main(["messages", "--locale", "fr", "--missing", *app]) == 0
    missing = json.loads(capsys.readouterr().out)
    assert "ui.send" not in missing
    assert "activity.my_notes" not in missing
    assert missing["ui.stop"] == keys()["ui.stop"]
    assert main(["messages", "--locale", "es"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        k: v for k, v in sorted(Catalogs().catalog("es").items()) if k in keys()
    }
    assert main(["messages", "--locale", "french!"]) == 2
    assert "is not a locale tag" in capsys.readouterr().err
