"""One conversation in two tabs or windows, in a real browser: a window that opens a
conversation whose turn is running follows that turn (the server names it); a tab whose
question meets a turn another tab started says, in the reader's language, to wait for
the answer, follows that turn, and keeps the question for after; never "Cannot reach".

The server's part: `GET /api/conversations/{id}` says `running_turn_id`, and a `409`
from `POST …/turns` carries the running turn's `turn_id`.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Browser, expect

from tests import scripts
from tests.fake_model import HOLD
from tests.web.chat import READ_TODO, TODO, Chat
from tests.web.conftest import Served

pytestmark = pytest.mark.browser

BUSY = {
    "en-US": "The assistant is still answering in another tab or window; wait for the answer.",
    "es-ES": "El asistente todavía está respondiendo en otra pestaña o ventana; "
    "espera la respuesta.",
}
OUTAGE = ("Cannot reach", "No se puede contactar")


def test_a_window_that_opens_a_conversation_whose_turn_runs_follows_it(
    browser: Browser, served: Served
) -> None:
    """The second window is another browser profile given the conversation (id and token)
    and nothing else: only the server can tell it that a turn runs, and which."""
    with served.answering([READ_TODO, HOLD, scripts.answer("your todos: write tests")]):
        first = Chat(served.page(browser))
        first.ask(TODO)
        expect(first.caption).to_have_text("Read a file")
        stored = first.stored()
        conversation = {"conversation_id": stored["conversation_id"], "token": stored["token"]}
        context = browser.new_context()
        key, value = json.dumps(f"turnkeeper-chat:{served.base}"), json.dumps(conversation)
        context.add_init_script(f"localStorage.setItem({key}, {json.dumps(value)})")
        page = context.new_page()
        page.goto(f"{served.base}/")
        second = Chat(page)
        expect(second.questions).to_have_text([TODO])
        expect(second.caption).to_have_text("Read a file")
        expect(second.stop).to_be_visible()
        served.model.release()
        expect(second.answers).to_have_text(["your todos: write tests"])
        expect(first.answers).to_have_text(["your todos: write tests"])
        expect(second.send).to_be_visible()
        expect(second.trouble).to_be_hidden()
        context.close()


@pytest.mark.parametrize("locale", ["en-US", "es-ES"])
def test_a_question_that_meets_another_tabs_turn_waits_for_it(
    browser: Browser, served: Served, locale: str
) -> None:
    answers = [scripts.answer(f"{n} answer") for n in ("first", "second", "third")]
    script = [answers[0], HOLD, *answers[1:]]
    with served.answering(script):
        first = Chat(served.page(browser, locale=locale))
        first.ask("first question")
        expect(first.answers).to_have_text(["first answer"])
        second = Chat(first.page.context.new_page())  # a tab of the same browser
        second.page.goto(f"{served.base}/")
        expect(second.answers).to_have_text(["first answer"])
        first.ask("second question")
        expect(first.stop).to_be_visible()
        second.input.fill("third question")
        with second.page.expect_response(lambda r: r.url.endswith("/turns")) as refused:
            second.input.press("Enter")
        assert refused.value.status == 409
        expect(second.trouble).to_have_text(BUSY[locale])
        expect(second.trouble).to_be_visible()
        expect(second.input).to_have_value("third question")  # kept for after
        expect(second.questions).to_have_text(["first question", "second question"])
        expect(second.stop).to_be_visible()  # it follows the other tab's turn
        served.model.release()
        expect(second.answers).to_have_text(["first answer", "second answer"])
        expect(second.trouble).to_be_hidden()
        assert not any(o in (second.trouble.text_content() or "") for o in OUTAGE)
        expect(second.send).to_be_visible()
        second.input.press("Enter")
        expect(second.answers).to_have_text(["first answer", "second answer", "third answer"])
