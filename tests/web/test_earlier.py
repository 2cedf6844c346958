"""A long conversation is read a page at a time: the widget shows the newest messages,
and older ones when the reader asks for them."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Route, expect

from tests import scripts
from tests.web.chat import Chat
from tests.web.conftest import Served
from tests.web.test_reader_controls import pressed

pytestmark = pytest.mark.browser


def test_the_widget_shows_the_newest_page_and_loads_earlier_ones_on_request(
    browser: Browser, served: Served
) -> None:
    answers = [scripts.answer(f"answer {n}") for n in (1, 2, 3)]
    with served.answering(answers):
        chat = Chat(served.page(browser))
        for n in (1, 2, 3):
            chat.ask(f"question {n}")
            expect(chat.answers.last).to_have_text(f"answer {n}")

        def two_a_page(route: Route) -> None:
            page = route.fetch()
            body = page.text().replace("<turnkeeper-chat>", '<turnkeeper-chat page-size="2">')
            route.fulfill(response=page, body=body)

        chat.page.route(f"{served.base}/", two_a_page)
        requests = chat.requests()
        chat.page.reload()
        earlier = chat.locator("button.earlier")
        expect(chat.bubbles.locator(".text")).to_have_text(["question 3", "answer 3"])
        expect(earlier).to_have_text("Show earlier messages")
        earlier.click()
        expect(chat.bubbles.locator(".text")).to_have_text(
            ["question 2", "answer 2", "question 3", "answer 3"]
        )
        earlier.click()
        expect(chat.bubbles.locator(".text")).to_have_text(
            ["question 1", "answer 1", "question 2", "answer 2", "question 3", "answer 3"]
        )
        expect(earlier).to_have_count(0)
    read = [r.url.split("?")[1] for r in requests if "/api/conversations/" in r.url]
    assert read == ["limit=2", "before=4&limit=2", "before=2&limit=2"]


def test_an_earlier_pages_rated_answers_show_their_thumb_pressed_after_a_reload(
    browser: Browser, served: Served
) -> None:
    """The ratings given come back with each page read after a reload, the newest and
    the earlier ones the reader asks for (each page's own `ratings`)."""
    answers = [scripts.answer(f"answer {n}") for n in (1, 2, 3)]
    with served.answering(answers):
        chat = Chat(served.page(browser))
        rated = chat.locator(".bubble.bot:has(.rating)")
        for n in (1, 2, 3):
            chat.ask(f"question {n}")
            expect(chat.answers.last).to_have_text(f"answer {n}")
        rated.nth(0).locator(".rate-down").click()
        pressed(rated.nth(0), "down")
        rated.nth(2).locator(".rate-up").click()
        pressed(rated.nth(2), "up")

        def two_a_page(route: Route) -> None:
            page = route.fetch()
            body = page.text().replace("<turnkeeper-chat>", '<turnkeeper-chat page-size="2">')
            route.fulfill(response=page, body=body)

        chat.page.route(f"{served.base}/", two_a_page)
        chat.page.reload()
        chat = Chat(chat.page)
        rated = chat.locator(".bubble.bot:has(.rating)")
        expect(chat.answers).to_have_text(["answer 3"])
        pressed(rated.nth(0), "up")
        chat.locator("button.earlier").click()
        expect(chat.answers).to_have_text(["answer 2", "answer 3"])
        expect(rated).to_have_count(2)
        pressed(rated.nth(0), None)
        pressed(rated.nth(1), "up")
        chat.locator("button.earlier").click()
        expect(chat.answers).to_have_text(["answer 1", "answer 2", "answer 3"])
        expect(rated).to_have_count(3)
        pressed(rated.nth(0), "down")
        pressed(rated.nth(1), None)
        pressed(rated.nth(2), "up")
    chat.page.context.close()
