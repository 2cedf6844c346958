"""A signed-in reader's conversations in a real browser (tests/web/apps/desk.py, whose
`reader` cookie says who reads): the widget lists the reader's earlier conversations
(titles and dates, newest first), opens the one chosen, starts a new one with "New
conversation", and a reload reopens the last one; in English and Spanish."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests import scripts
from tests.web.chat import Chat
from tests.web.conftest import Served, serving
from tests.web.test_cards import signed_in

pytestmark = pytest.mark.browser

APPS = Path(__file__).resolve().parent / "apps"
WORDS = {
    "en-US": ("Conversations", "New conversation", "No conversations yet."),
    "es-ES": ("Conversaciones", "Nueva conversación", "Todavía no hay conversaciones."),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    app = ("desk:assistant", "--app-dir", str(APPS))
    with serving([], tmp_path_factory.mktemp("desk"), *app) as served:
        yield served


@pytest.mark.parametrize("locale", ["en-US", "es-ES"])
def test_a_reader_finds_earlier_conversations_and_starts_new_ones(
    browser: Browser, served: Served, locale: str
) -> None:
    listed, new, none = WORDS[locale]
    script = [scripts.answer("about teapots"), scripts.answer("about kettles")]
    with served.answering(script):
        chat = Chat(signed_in(browser, served, f"lists-{locale}", locale=locale))
        toggle = chat.locator(".history-toggle")
        threads = chat.locator(".thread")
        expect(toggle).to_have_text(listed)
        toggle.click()
        expect(chat.locator(".history-empty")).to_have_text(none)
        toggle.click()
        chat.ask("teapots?")
        expect(chat.answers).to_have_text(["about teapots"])
        chat.locator(".new").click()
        expect(chat.bubbles).to_have_count(0)
        expect(chat.input).to_be_focused()
        chat.ask("kettles?")
        expect(chat.answers).to_have_text(["about kettles"])
        assert chat.locator(".new").text_content() == new

        toggle.click()
        expect(threads.locator(".thread-title")).to_have_text(["kettles?", "teapots?"])
        expect(threads.locator("time")).to_have_count(2)
        assert threads.first.get_attribute("aria-current") == "true"  # the one shown
        threads.nth(1).click()
        expect(chat.bubbles.locator(".text")).to_have_text(["teapots?", "about teapots"])
        expect(chat.locator(".history-list")).to_be_hidden()

        chat.page.reload()  # the last one opened is the one reopened
        expect(chat.bubbles.locator(".text")).to_have_text(["teapots?", "about teapots"])
    assert len(served.model.requests) == 2
    chat.page.context.close()


def test_another_reader_lists_only_their_own(browser: Browser, served: Served) -> None:
    with served.answering([scripts.answer("hello ada")]):
        ada = Chat(signed_in(browser, served, "ada-own"))
        ada.ask("ada's question")
        expect(ada.answers).to_have_text(["hello ada"])
        bob = Chat(signed_in(browser, served, "bob-own"))
        bob.locator(".history-toggle").click()
        expect(bob.locator(".history-empty")).to_be_visible()
        expect(bob.locator(".thread")).to_have_count(0)
        ada.page.context.close()
        bob.page.context.close()
