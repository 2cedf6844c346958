"""An assistant of one's own in a real browser: its name on the header and on its bubbles,
its captions and catalog entries in the reader's locale (negotiated against the locales
the server lists), and that locale sent with every turn, as far as the tools.

`turnkeeper serve shop:assistant` (tests/web/apps/shop.py) against a fake model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests import scripts
from tests.fake_model import HOLD
from tests.web.chat import Chat
from tests.web.conftest import Served, serving

pytestmark = pytest.mark.browser

APPS = Path(__file__).resolve().parent / "apps"
NAME = "Shop helper"
ORDERS = "where are my orders?"
LOOK_UP = scripts.body([scripts.tool_use("my_orders")], "tool_use")
"""The model asks for the shop's `my_orders`, whose caption the reader then sees."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The shop's assistant instead of the demo one, for every test of this module (the
    `served` fixture of conftest.py hands it out, re-scripted)."""
    app = ("shop:assistant", "--app-dir", str(APPS))
    with serving([], tmp_path_factory.mktemp("shop"), *app) as served:
        yield served


def tool_results(request: Any) -> list[Any]:
    """The contents of the tool results a model request carries, in its last message."""
    content = request["messages"][-1]["content"]
    return [block["content"] for block in content if block.get("type") == "tool_result"]


def text_of(content: Any) -> str:
    """A tool result's content as text (a string, or a list of text blocks)."""
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content)


def test_a_french_reader_gets_the_assistants_french_and_its_tools_get_fr(
    browser: Browser, served: Served
) -> None:
    with served.answering([LOOK_UP, HOLD, scripts.answer("Deux commandes en route.")]):
        chat = Chat(served.page(browser, locale="fr-FR"))
        expect(chat.send).to_have_text("Envoyer")
        expect(chat.input).to_have_attribute("placeholder", "Posez une question…")
        expect(chat.locator(".title")).to_have_text(NAME)
        expect(chat.locator("section")).to_have_attribute("lang", "fr")
        with chat.page.expect_request(lambda r: r.url.endswith("/turns")) as turn:
            chat.ask(ORDERS)
        assert turn.value.post_data_json == {"text": ORDERS, "locale": "fr"}
        expect(chat.caption).to_have_text("A consulté vos commandes")  # the model is held
        served.model.release()
        expect(chat.answers).to_have_text(["Deux commandes en route."])
        expect(chat.locator(".bubble.user .who")).to_have_text(["vous"])
        expect(chat.locator(".bubble.bot .who")).to_have_text([NAME])
        expect(chat.stop).to_be_hidden()
    asked = served.model.requests
    assert len(asked) == 2
    assert [text_of(result) for result in tool_results(asked[1])] == ["fr"]


@pytest.mark.parametrize(
    ("locale", "lang", "placeholder", "you"),
    [
        ("pt-BR", "pt-BR", "Pergunte algo…", "você"),
        ("pt-PT", "en", "Ask something…", "You"),  # pt-BR is not Portugal's; no pt catalog
        ("fr-CA", "fr", "Posez une question…", "vous"),  # the shorter form, fr
        ("de-DE", "en", "Ask something…", "You"),  # a language the assistant does not speak
        ("es-ES", "es", "Pregunta algo…", "Tú"),  # the shipped Spanish
    ],
)
def test_the_locale_is_negotiated_against_the_assistants_locales(
    browser: Browser, served: Served, locale: str, lang: str, placeholder: str, you: str
) -> None:
    with served.answering([scripts.answer("ok")]):
        chat = Chat(served.page(browser, locale=locale))
        expect(chat.input).to_have_attribute("placeholder", placeholder)
        expect(chat.locator("section")).to_have_attribute("lang", lang)
        with chat.page.expect_request(lambda r: r.url.endswith("/turns")) as turn:
            chat.ask("hello")
        expect(chat.answers).to_have_text(["ok"])
        expect(chat.locator(".bubble.user .who")).to_have_text([you])
    assert turn.value.post_data_json == {"text": "hello", "locale": lang}


def test_the_lang_attribute_is_matched_whatever_its_case_and_separator(
    browser: Browser, served: Served
) -> None:
    """`lang="PT_br"` in a French browser: the attribute first, `_` read as `-`. The tool
    gets pt-BR, which only the turn's body says (the browser's Accept-Language says fr)."""
    with served.answering([LOOK_UP, scripts.answer("Dois pedidos a caminho.")]):
        page = served.page(browser, locale="fr-FR")
        page.set_content(
            f'<script src="{served.base}/widget.js"></script>'
            '<turnkeeper-chat lang="PT_br"></turnkeeper-chat>'
        )
        chat = Chat(page)
        expect(chat.input).to_have_attribute("placeholder", "Pergunte algo…")
        expect(chat.locator("section")).to_have_attribute("lang", "pt-BR")
        expect(chat.locator(".title")).to_have_text(NAME)
        chat.ask(ORDERS)
        expect(chat.answers).to_have_text(["Dois pedidos a caminho."])
    assert [text_of(result) for result in tool_results(served.model.requests[1])] == ["pt-BR"]


def test_a_spanish_reader_gets_the_shipped_spanish_and_the_tools_spanish_caption(
    browser: Browser, served: Served
) -> None:
    with served.answering([LOOK_UP, HOLD, scripts.answer("Dos pedidos en camino.")]):
        chat = Chat(served.page(browser, locale="es-ES"))
        expect(chat.send).to_have_text("Enviar")
        chat.ask(ORDERS)
        expect(chat.caption).to_have_text("Consultó tus pedidos")
        expect(chat.stop).to_have_text("Detener")
        served.model.release()
        expect(chat.answers).to_have_text(["Dos pedidos en camino."])
        expect(chat.locator(".bubble.bot .who")).to_have_text([NAME])
    assert [text_of(result) for result in tool_results(served.model.requests[1])] == ["es"]


def labels(page: Page) -> list[str]:
    return page.locator("turnkeeper-chat .bubble .who").all_text_contents()


def test_the_assistants_bubbles_carry_its_name_never_bot(browser: Browser, served: Served) -> None:
    with served.answering([scripts.answer("first"), scripts.answer("second")]):
        chat = Chat(served.page(browser, locale="en-US"))
        expect(chat.locator(".title")).to_have_text(NAME)
        chat.ask("one")
        expect(chat.answers).to_have_text(["first"])
        chat.ask("two")
        expect(chat.answers).to_have_text(["first", "second"])
        assert labels(chat.page) == ["You", NAME, "You", NAME]
        chat.page.reload()  # a restored transcript is labelled the same
        expect(chat.bubbles).to_have_count(4)
        assert labels(chat.page) == ["You", NAME, "You", NAME]
        assert "bot" not in chat.page.locator("turnkeeper-chat").inner_text().lower()
