"""`turnkeeper serve shop:assistant --app-dir examples/shop --provider dev` in real Chromium,
with no key anywhere: a signed-in reader asks anything and sees each tool's caption, the
order's card, the approval the cancellation asks for, and, once approved, the answer
streaming in word by word.

The server is tests/test_dev_model.py's; nothing fakes the model.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.test_dev_model import DevShop, serving_dev
from tests.test_example_shop import COOKIE, SECRET, cookie
from tests.web.chat import Chat
from tests.web.conftest import RESULTS

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def dev_shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevShop]:
    """The shop's assistant on the dev model, at 60 words a second: a stream a reader sees."""
    with serving_dev(tmp_path_factory.mktemp("dev-web"), pace="60") as shop:
        yield shop


def signed_in(browser: Browser, shop: DevShop, name: str) -> Page:
    """The chat, for a reader the shop signed in (its session cookie)."""
    context = browser.new_context(locale="en-US", viewport={"width": 760, "height": 1000})
    session = {"name": COOKIE, "value": cookie(name, SECRET), "url": shop.base}
    context.add_cookies([session])  # type: ignore[list-item]
    page = context.new_page()
    page.goto(f"{shop.base}/")
    return page


def answer_lengths(page: Page) -> None:
    """From now on, record every length the last answer's text has, as it is drawn."""
    page.evaluate(
        """() => {
            const root = document.querySelector("turnkeeper-chat").shadowRoot;
            window.answerLengths = [];
            new MutationObserver(() => {
                const answers = root.querySelectorAll(".bubble.bot:not(.notice) .text");
                const last = answers[answers.length - 1];
                if (last) window.answerLengths.push(last.textContent.length);
            }).observe(root, {childList: true, characterData: true, subtree: true});
        }"""
    )


def test_the_shop_on_the_dev_model_shows_captions_a_card_an_approval_and_a_stream(
    browser: Browser, dev_shop: DevShop
) -> None:
    page = signed_in(browser, dev_shop, "ada")
    chat = Chat(page)
    expect(chat.locator(".title")).to_have_text("Shop helper")
    captions = chat.captions_shown()
    chat.ask("What can you do?")
    card = chat.locator(".bubble.card")
    expect(card.locator(".card-title")).to_have_text("Order A-1001")
    expect(card.locator("dd")).to_have_text(["teapot", "shipped"])
    expect(card.locator("a")).to_have_attribute("href", "https://carrier.example/track/A-1001")
    approval = chat.locator(".approval")
    expect(approval.locator(".approval-what")).to_have_text("Cancel an order")
    expect(approval.locator(".approval-input")).to_have_text("order_id: A-1002")
    shown = captions()
    for caption in ("Looked up your orders", "Checked an order", "Showed an order"):
        assert caption in shown, shown
    answer_lengths(page)
    approval.locator("button.approve").click()
    expect(chat.locator(".approval")).to_have_count(0)
    last = chat.answers.last
    expect(last).to_contain_text("A-1002 is cancelled.")
    expect(last).to_contain_text("choose a provider other than dev")
    expect(last.locator("strong").first).to_have_text("dev model")
    expect(chat.stop).to_be_hidden()
    lengths = sorted(set(page.evaluate("window.answerLengths")))
    assert len(lengths) >= 5, f"the answer grew in steps as it streamed: {lengths}"
    RESULTS.mkdir(exist_ok=True)
    page.screenshot(path=RESULTS / "dev-model-shop.png", full_page=True)
    page.context.close()
