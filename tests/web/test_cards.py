"""A tool's card in a real browser: `turnkeeper serve desk:assistant` (tests/web/apps/desk.py),
whose Python tool returns a `Card`. The reader sees it as a card of its own after the tool
ran (title, label and value pairs, the table, only its https: link), drawn as text; the
model read it as JSON. Also the screenshot of a card and a Markdown answer for the README.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests import scripts
from tests.web.apps.desk import HOSTILE_LINK, PLAIN_HTTP, TRACKING
from tests.web.chat import Chat
from tests.web.conftest import RESULTS, Served, serving

pytestmark = pytest.mark.browser

APPS = Path(__file__).resolve().parent / "apps"
NAME = "Help desk"
LOOK_UP = scripts.asks(
    scripts.tool_use("order_card", {"order_id": "A-1001"}), say="Let me look that up."
)
ANSWER = """**Shipped** today, in *two* parcels:

1. Watch for the courier
2. Keep the `A-1001` reference

Questions? [Write to us](https://shop.example/help)."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The help desk's assistant, for every test of this module."""
    app = ("desk:assistant", "--app-dir", str(APPS))
    with serving([], tmp_path_factory.mktemp("desk"), *app) as served:
        yield served


def signed_in(browser: Browser, served: Served, reader: str, **options: Any) -> Page:
    """A fresh browser profile whose reader is signed in (the desk's `reader` cookie)."""
    context = browser.new_context(**options)
    context.add_cookies([{"name": "reader", "value": reader, "url": served.base}])
    page = context.new_page()
    page.goto(f"{served.base}/")
    return page


@pytest.mark.parametrize(
    ("locale", "viewport"),
    [("en-US", {"width": 760, "height": 900}), ("es-ES", {"width": 390, "height": 844})],
    ids=["en-desktop", "es-phone"],
)
def test_a_tools_card_is_drawn_as_a_card_with_only_its_https_link(
    browser: Browser, served: Served, locale: str, viewport: dict[str, int]
) -> None:
    with served.answering([LOOK_UP, scripts.answer(ANSWER)]):
        page = signed_in(browser, served, f"card-{locale}", locale=locale, viewport=viewport)
        chat = Chat(page)
        chat.ask("where is my order A-1001?")
        card = chat.locator(".bubble.card")
        expect(card.locator(".card-title")).to_have_text("Order A-1001")
        expect(card.locator("dt")).to_have_text(["Status", "Total", "Parcels"])
        expect(card.locator("dd")).to_have_text(["shipped", "€42.00", "2"])
        expect(card.locator("th")).to_have_text(["Item", "Qty", "Price"])
        expect(card.locator("td")).to_have_text(["Teapot", "1", "€30.00", "Kettle", "1", "€12.00"])
        link = card.locator("a")
        expect(link).to_have_count(1)  # the javascript: and http: links are dropped
        expect(link).to_have_text("Track the parcel")
        assert link.get_attribute("href") == TRACKING
        assert link.get_attribute("target") == "_blank"
        assert link.get_attribute("rel") == "noopener noreferrer"
        expect(card).not_to_contain_text("Run this")
        expect(card).not_to_contain_text("Insecure page")
        expect(card.locator(".who")).to_have_text(NAME)
        expect(chat.locator(".bubble.bot .markdown strong")).to_have_text(["Shipped"])
        # In order: the question, the text before the tool, the card, the answer (once the
        # published state has replaced the streamed bubble: no bubble is live any more).
        expect(chat.locator(".bubble.live")).to_have_count(0)
        kinds = chat.locator(".bubble").evaluate_all(
            "bubbles => bubbles.map(b => b.classList.contains('card') ? 'card' : b.className)"
        )
        assert kinds == ["bubble user", "bubble bot", "card", "bubble bot"]
        assert chat.page.evaluate("window.__pwned") is None
        assert (
            chat.locator(f'.log a[href="{HOSTILE_LINK}"], .log a[href="{PLAIN_HTTP}"]').count() == 0
        )
        width = chat.page.evaluate("document.documentElement.scrollWidth")
        assert width <= viewport["width"]
        chat.page.reload()  # the transcript brings the card back
        expect(chat.locator(".bubble.card .card-title")).to_have_text("Order A-1001")
        page.context.close()
    [result] = [
        block["content"]
        for block in served.model.requests[1]["messages"][-1]["content"]
        if block.get("type") == "tool_result"
    ]
    assert json.loads(result if isinstance(result, str) else result[0]["text"])["title"] == (
        "Order A-1001"
    )


def test_a_screenshot_of_a_card_and_a_markdown_answer(browser: Browser, served: Served) -> None:
    """test-results/chat-card-markdown.png, the README's picture of the chat."""
    with served.answering([LOOK_UP, scripts.answer(ANSWER)]):
        page = signed_in(browser, served, "screenshot", viewport={"width": 760, "height": 780})
        chat = Chat(page)
        chat.ask("Where is my order A-1001?")
        expect(chat.locator(".bubble.card .card-title")).to_have_text("Order A-1001")
        expect(chat.locator(".markdown ol > li")).to_have_count(2)
        expect(chat.send).to_be_visible()
        chat.input.blur()
        RESULTS.mkdir(exist_ok=True)
        page.screenshot(path=RESULTS / "chat-card-markdown.png")
        page.context.close()
