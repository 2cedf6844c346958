"""An approval card in a real browser (docs/design.md §11): what the assistant wants to do,
in the reader's language, with Approve and Deny; shown again after a reload; once decided,
the widget follows the turn to its answer.

`turnkeeper serve payments:assistant` (tests/apps/payments.py) against a fake model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests import scripts
from tests.web.chat import Chat
from tests.web.conftest import Served, serving

pytestmark = pytest.mark.browser

APPS = Path(__file__).resolve().parents[1] / "apps"
DELETE = scripts.asks(scripts.tool_use("delete_file", {"path": "notes.txt"}))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    app = ("payments:assistant", "--app-dir", str(APPS))
    with serving([], tmp_path_factory.mktemp("payments"), *app) as served:
        yield served


def tool_result(served: Served) -> dict[str, object]:
    block: dict[str, object] = served.model.requests[-1]["messages"][-1]["content"][0]
    return block


def test_an_english_reader_approves_and_the_tool_runs(browser: Browser, served: Served) -> None:
    with served.answering([DELETE, scripts.answer("Your notes are gone.")]):
        page = served.page(browser, locale="en-US")
        chat = Chat(page)
        chat.ask("delete my notes")
        card = chat.locator(".approval")
        expect(card.locator(".approval-title")).to_have_text("The assistant wants to do this:")
        expect(card.locator(".approval-what")).to_have_text("Delete a file")
        expect(card.locator(".approval-input")).to_have_text("path: notes.txt")
        expect(card.locator("button.deny")).to_have_text("Deny")
        expect(chat.stop).to_be_visible()
        page.reload()
        chat = Chat(page)
        card = chat.locator(".approval")
        expect(card.locator(".approval-what")).to_have_text("Delete a file")
        assert len(served.model.requests) == 1
        card.locator("button.approve").click()
        expect(chat.answers.last).to_have_text("Your notes are gone.")
        expect(chat.locator(".approval")).to_have_count(0)
        expect(chat.send).to_be_visible()
    assert len(served.model.requests) == 2
    assert tool_result(served)["content"] == "deleted notes.txt"


def test_a_spanish_reader_denies_in_spanish_and_the_tool_never_runs(
    browser: Browser, served: Served
) -> None:
    with served.answering([DELETE, scripts.answer("De acuerdo, no borro nada.")]):
        chat = Chat(served.page(browser, locale="es-ES"))
        chat.ask("borra mis notas")
        card = chat.locator(".approval")
        expect(card.locator(".approval-title")).to_have_text("El asistente quiere hacer esto:")
        expect(card.locator(".approval-what")).to_have_text("Borrar un archivo")
        expect(card.locator("button.approve")).to_have_text("Aprobar")
        card.locator("button.deny").click()
        expect(chat.answers.last).to_have_text("De acuerdo, no borro nada.")
        expect(chat.locator(".approval")).to_have_count(0)
    result = tool_result(served)
    assert result["is_error"] is True
    assert "declined" in str(result["content"])


def test_stop_while_waiting_ends_the_turn_and_takes_the_card_away(
    browser: Browser, served: Served
) -> None:
    with served.answering([DELETE]):
        chat = Chat(served.page(browser, locale="en-US"))
        chat.ask("delete my notes")
        expect(chat.locator(".approval")).to_have_count(1)
        chat.stop.click()
        expect(chat.notices.last).to_have_text("Stopped.")
        expect(chat.locator(".approval")).to_have_count(0)
        expect(chat.send).to_be_visible()
    assert len(served.model.requests) == 1
