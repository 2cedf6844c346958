"""examples/shop/shop.py in real Chromium: a French reader signs in through the shop's own
form, lands on the assistant, sees the French caption of the shop's tool while the turn
runs, then the answer; before signing in, the widget asks the reader to sign in.

The example runs as its docstring says (tests/test_example_shop.py starts it), against a
fake model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests import scripts
from tests.fake_model import HOLD
from tests.test_example_shop import ADAS_ORDERS, Shop, tool_results
from tests.test_example_shop import shop as shop  # the module's one example process
from tests.web.chat import Chat
from tests.web.conftest import RESULTS, Served

pytestmark = pytest.mark.browser

NAME = "Shop helper"
QUESTION = "Où en sont mes commandes ?"
ANSWER = "Votre théière est expédiée ; la bouilloire est en préparation."


@pytest.fixture
def served(shop: Shop) -> Iterator[Served]:
    """The example as conftest.py's `Served`: re-scripted per test, and on a failure its log
    and the fake model's requests shown with the report."""
    served = Served(shop.base, shop.model, shop.log).answering([])
    yield served
    shop.model.release()  # a test that failed mid-hold leaves no turn hanging


def sign_in(page: Page, base: str, name: str) -> None:
    """From the shop's home page, through its sign-in form, as a reader would."""
    page.goto(f"{base}/")
    expect(page.get_by_text("You are not signed in.")).to_be_visible()
    page.get_by_role("link", name="Sign in").click()
    page.get_by_label("Your name").fill(name)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{base}/assistant/")


def test_a_french_reader_signs_in_sees_the_caption_then_the_answer(
    browser: Browser, served: Served
) -> None:
    script = [scripts.asks(scripts.tool_use("my_orders")), HOLD, scripts.answer(ANSWER)]
    page = browser.new_context(locale="fr-FR", viewport={"width": 760, "height": 600}).new_page()
    with served.answering(script):
        sign_in(page, served.base, "ada")
        chat = Chat(page)
        expect(chat.locator(".title")).to_have_text(NAME)
        expect(chat.send).to_have_text("Envoyer")
        expect(chat.input).to_have_attribute("placeholder", "Posez une question…")
        with page.expect_request(lambda r: r.url.endswith("/turns")) as turn:
            chat.ask(QUESTION)
        assert turn.value.post_data_json == {"text": QUESTION, "locale": "fr"}
        expect(chat.caption).to_have_text("A consulté vos commandes")  # the model is held
        expect(chat.stop).to_have_text("Arrêter")
        served.model.release()
        expect(chat.answers).to_have_text([ANSWER])
        expect(chat.caption).to_have_text("")
        expect(chat.locator(".bubble.user .who")).to_have_text(["Vous"])
        expect(chat.locator(".bubble.bot .who")).to_have_text([NAME])
        expect(chat.trouble).to_be_hidden()
        RESULTS.mkdir(exist_ok=True)
        page.screenshot(path=RESULTS / "example-shop.png")
    [result] = tool_results(served.model.requests[1])
    assert json.loads(result) == ADAS_ORDERS, "the tool was told the reader the cookie named"
    page.goto(f"{served.base}/")
    expect(page.locator("strong")).to_have_text("ada")
    page.context.close()


@pytest.mark.parametrize(
    ("locale", "sentence"),
    [
        ("en-US", "Sign in to talk to the assistant."),
        ("fr-FR", "Connectez-vous pour parler à l’assistant."),
    ],
)
def test_before_signing_in_the_widget_asks_the_reader_to_sign_in(
    browser: Browser, served: Served, locale: str, sentence: str
) -> None:
    page = browser.new_context(locale=locale).new_page()
    page.goto(f"{served.base}/assistant/")
    chat = Chat(page)
    expect(chat.locator(".title")).to_have_text(NAME)
    expect(chat.trouble).to_have_text(sentence)  # said at once, before a question is typed
    expect(chat.send).to_be_visible()
    chat.input.fill("where are my orders?")
    with page.expect_response(lambda r: r.url.endswith("/api/conversations")) as refused:
        chat.input.press("Enter")
    assert refused.value.status == 401
    expect(chat.trouble).to_have_text(sentence)
    expect(chat.trouble).to_be_visible()
    expect(chat.input).to_have_value("where are my orders?")  # nothing typed is lost
    expect(chat.bubbles).to_have_count(0)
    assert served.model.requests == [], "no turn was started"
    page.context.close()
