"""Keyboard and screen readers in a real browser: Stop, by keyboard or by click, leaves
focus in the text box, as an answer does; the next question can be written while the
assistant works (only sending waits); no live region sits under `aria-busy`; the text box
is at least 16 px on a phone, so its browser does not zoom in."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Route, expect

from tests import scripts
from tests.fake_model import HOLD
from tests.web.chat import Chat
from tests.web.conftest import Served

pytestmark = pytest.mark.browser


def test_stop_by_keyboard_leaves_focus_in_the_text_box(browser: Browser, served: Served) -> None:
    with served.answering([HOLD, scripts.answer("never shown")]):
        chat = Chat(served.page(browser))
        chat.ask("take your time")
        expect(chat.stop).to_be_visible()
        expect(chat.input).to_be_focused()
        chat.page.keyboard.press("Tab")  # from the text box to Stop (Send is hidden)
        expect(chat.stop).to_be_focused()
        chat.page.keyboard.press("Enter")
        expect(chat.input).to_be_focused()  # at once, not once the turn has ended
        expect(chat.notices).to_have_text(["Stopped."])
        expect(chat.send).to_be_visible()
        expect(chat.input).to_be_focused()
        chat.page.keyboard.type("next")
        expect(chat.input).to_have_value("next")


def test_stop_by_click_and_send_by_click_leave_focus_in_the_text_box(
    browser: Browser, served: Served
) -> None:
    with served.answering([HOLD, scripts.answer("never shown")]):
        chat = Chat(served.page(browser))
        chat.input.fill("take your time")
        chat.send.click()
        expect(chat.stop).to_be_visible()
        expect(chat.input).to_be_focused()  # the Send button clicked is hidden now
        chat.stop.click()
        expect(chat.input).to_be_focused()
        expect(chat.notices).to_have_text(["Stopped."])
        served.answering([scripts.answer("second")])  # the stopped call took nothing
        chat.input.fill("again")
        chat.send.click()
        expect(chat.answers).to_have_text(["second"])
        expect(chat.input).to_be_focused()  # after an answer too


def test_the_next_question_is_written_while_the_assistant_works_and_sent_after(
    browser: Browser, served: Served
) -> None:
    with served.answering([HOLD, scripts.answer("first answer"), scripts.answer("second answer")]):
        chat = Chat(served.page(browser))
        chat.ask("first question")
        expect(chat.stop).to_be_visible()
        chat.page.keyboard.type("second question")
        expect(chat.input).to_have_value("second question")
        chat.page.keyboard.press("Enter")  # only sending waits: nothing is sent, nothing lost
        expect(chat.input).to_have_value("second question")
        expect(chat.questions).to_have_text(["first question"])
        served.model.release()
        expect(chat.answers).to_have_text(["first answer"])
        # The answer streams in before the turn is done: sending waits for done.
        expect(chat.stop).to_be_hidden()
        expect(chat.input).to_have_value("second question")
        chat.page.keyboard.press("Enter")
        expect(chat.answers).to_have_text(["first answer", "second answer"])
        expect(chat.questions).to_have_text(["first question", "second question"])
        expect(chat.input).to_have_value("")


LIVE_UNDER_BUSY = """chat => [...chat.shadowRoot.querySelectorAll('[aria-busy="true"]')].some(
    busy => busy.matches(LIVE) || busy.querySelector(LIVE) !== null
)""".replace("LIVE", "'[aria-live], [role=log], [role=status], [role=alert]'")


def test_no_live_region_sits_under_aria_busy_while_the_assistant_works(
    browser: Browser, served: Served
) -> None:
    with served.answering([HOLD, scripts.answer("done")]):
        chat = Chat(served.page(browser))
        chat.ask("hello")
        expect(chat.caption).to_have_text("Working…")
        host = chat.page.locator("turnkeeper-chat")
        assert host.evaluate(LIVE_UNDER_BUSY) is False
        served.model.release()
        expect(chat.answers).to_have_text(["done"])
        assert host.evaluate(LIVE_UNDER_BUSY) is False


@pytest.mark.parametrize("width", [390, 320])
def test_the_text_box_is_16_px_or_more_on_a_phone(
    browser: Browser, served: Served, width: int
) -> None:
    chat = Chat(served.page(browser, viewport={"width": width, "height": 780}))
    expect(chat.send).to_be_visible()
    assert chat.input.evaluate("e => parseFloat(getComputedStyle(e).fontSize)") >= 16


def test_the_chat_stays_unseen_until_its_stylesheet_is_in(browser: Browser, served: Served) -> None:
    """The widget's styles load after its markup is built: until they are in, the reader
    sees nothing rather than the bare markup at the browser's sizes (a 13 px text box that
    a phone zooms into). Found by the 16 px test above, which read the size too early."""
    page = browser.new_context(viewport={"width": 390, "height": 780}).new_page()
    held: list[Route] = []
    page.route("**/widget.css", lambda route: held.append(route))
    page.goto(f"{served.base}/")
    chat = Chat(page)
    expect(chat.input).to_be_attached()
    for _ in range(100):  # the stylesheet is asked for once the markup is in
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the widget asked for its stylesheet"
    expect(chat.send).not_to_be_visible()
    expect(chat.input).not_to_be_visible()
    held[0].continue_()
    expect(chat.send).to_be_visible()
    assert chat.input.evaluate("e => parseFloat(getComputedStyle(e).fontSize)") >= 16


def test_the_bubbles_are_labelled_you_and_the_assistants_name(
    browser: Browser, served: Served
) -> None:
    with served.answering([scripts.answer("hola")]):
        chat = Chat(served.page(browser, locale="es-ES"))
        chat.ask("hola")
        expect(chat.answers).to_have_text(["hola"])
        expect(chat.locator(".who")).to_have_text(["Tú", "Asistente"])  # its Spanish name
        expect(chat.locator(".threads")).to_be_hidden()  # tokens: no list of conversations
