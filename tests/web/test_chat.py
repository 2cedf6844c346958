"""The conversation in a real browser: caption, answer, notices in the reader's language,
Stop, reload, the keyboard; against a real `turnkeeper serve` and a fake model."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Route, expect

from tests import scripts
from tests.fake_model import HOLD
from tests.web.chat import READ_TODO, TODO, Chat
from tests.web.conftest import RESULTS, Served, serving

pytestmark = pytest.mark.browser


def test_the_todo_question_shows_the_reading_caption_then_the_answer(
    browser: Browser, served: Served
) -> None:
    script = [READ_TODO, HOLD, scripts.answer("your todos: write tests")]
    with served.answering(script):
        chat = Chat(served.page(browser, viewport={"width": 760, "height": 560}))
        chat.ask(TODO)
        expect(chat.caption).to_have_text("Read a file")
        expect(chat.input).to_be_editable()  # the next question can be written meanwhile
        expect(chat.send).to_be_hidden()  # only sending waits
        expect(chat.stop).to_be_visible()
        served.model.release()
        expect(chat.answers).to_have_text(["your todos: write tests"])
        expect(chat.caption).to_have_text("")
        expect(chat.input).to_be_editable()
        expect(chat.send).to_be_visible()
        expect(chat.stop).to_be_hidden()
        expect(chat.texts).to_have_text([TODO, "your todos: write tests"])
        RESULTS.mkdir(exist_ok=True)
        chat.page.screenshot(path=RESULTS / "widget.png")


@pytest.mark.parametrize(
    ("locale", "notice", "send"),
    [
        ("en-US", "The answer was cut off before it was complete, so it is not shown.", "Send"),
        (
            "es-ES",
            "La respuesta se cortó antes de estar completa, así que no se muestra.",
            "Enviar",
        ),
    ],
)
def test_a_truncated_turn_shows_the_notice_in_the_browsers_language(
    browser: Browser, served: Served, locale: str, notice: str, send: str
) -> None:
    cut = scripts.body([scripts.text("the first half of an ans")], "max_tokens")
    with served.answering([cut]):
        chat = Chat(served.page(browser, locale=locale))
        chat.ask("tell me everything")
        expect(chat.notices).to_have_text([notice])
        expect(chat.locator(".bubble.notice.error")).to_have_count(1)
        expect(chat.input).to_be_editable()
        expect(chat.send).to_have_text(send)
        assert "the first half" not in chat.page.locator("turnkeeper-chat").inner_text()


def test_the_lang_attribute_wins_over_the_browsers_languages(
    browser: Browser, served: Served
) -> None:
    """One script tag and one element, on any page: `lang="es"` in an English browser."""
    with served.answering([scripts.answer("hola")]):
        page = served.page(browser, locale="en-US")
        page.set_content(
            f'<script src="{served.base}/widget.js"></script>'
            f'<turnkeeper-chat api="{served.base}" lang="es"></turnkeeper-chat>'
        )
        chat = Chat(page)
        expect(chat.send).to_have_text("Enviar")
        expect(chat.input).to_have_attribute("placeholder", "Pregunta algo…")
        chat.ask("hola")
        expect(chat.answers).to_have_text(["hola"])
        expect(chat.locator(".bubble.bot .who")).to_have_text(["Asistente"])  # its Spanish name


def test_the_widget_loads_as_a_module_too(browser: Browser, served: Served) -> None:
    """`<script type="module" src=".../widget.js">` works as the classic tag does."""
    with served.answering([scripts.answer("from a module")]):
        page = served.page(browser)
        page.set_content(
            f'<script type="module" src="{served.base}/widget.js"></script>'
            f'<turnkeeper-chat api="{served.base}"></turnkeeper-chat>'
        )
        chat = Chat(page)
        chat.ask("hello")
        expect(chat.answers).to_have_text(["from a module"])


def test_a_reload_restores_the_transcript(browser: Browser, served: Served) -> None:
    script = [scripts.answer("first answer"), scripts.answer("second answer")]
    with served.answering(script):
        chat = Chat(served.page(browser))
        chat.ask("first question")
        expect(chat.answers).to_have_text(["first answer"])
        chat.page.reload()
        expect(chat.bubbles).to_have_count(2)
        expect(chat.texts).to_have_text(["first question", "first answer"])
        chat.ask("second question")
        expect(chat.answers).to_have_text(["first answer", "second answer"])
        expect(chat.texts).to_have_text(
            ["first question", "first answer", "second question", "second answer"]
        )
    assert len(served.model.requests[1]["messages"]) == 3  # one conversation, continued


def test_a_reload_while_a_turn_runs_follows_it_to_the_end(browser: Browser, served: Served) -> None:
    with served.answering([READ_TODO, HOLD, scripts.answer("done at last")]):
        chat = Chat(served.page(browser))
        chat.ask(TODO)
        expect(chat.caption).to_have_text("Read a file")
        chat.page.reload()
        expect(chat.caption).to_have_text("Read a file")
        expect(chat.stop).to_be_visible()
        served.model.release()
        expect(chat.answers).to_have_text(["done at last"])
        expect(chat.input).to_be_editable()
        expect(chat.texts).to_have_text([TODO, "done at last"])


def test_the_keyboard_alone_asks_breaks_lines_and_stops(browser: Browser, served: Served) -> None:
    with served.answering([HOLD, scripts.answer("late")]):
        chat = Chat(served.page(browser))
        expect(chat.send).to_be_visible()
        chat.page.keyboard.press("Tab")
        expect(chat.input).to_be_focused()
        outline = chat.input.evaluate("e => getComputedStyle(e).outlineStyle")
        assert outline not in ("", "none")  # focus shows
        chat.page.keyboard.type("line one")
        chat.page.keyboard.press("Shift+Enter")
        chat.page.keyboard.type("line two")
        expect(chat.input).to_have_value("line one\nline two")
        expect(chat.bubbles).to_have_count(0)
        chat.page.keyboard.press("Enter")
        expect(chat.bubbles.locator(".text")).to_have_text(["line one\nline two"])
        expect(chat.stop).to_be_visible()
        with chat.page.expect_request(
            lambda r: r.method == "POST" and r.url.endswith("/cancel")
        ) as cancel:
            chat.page.keyboard.press("Escape")
        assert cancel.value.response() is not None
        assert cancel.value.response().status == 202  # type: ignore[union-attr]
        served.model.release()
        expect(chat.input).to_be_editable()
        expect(chat.input).to_be_focused()


def test_stop_during_a_slow_model_call_shows_the_stopped_notice_within_two_seconds(
    browser: Browser, served: Served
) -> None:
    with served.answering([HOLD, scripts.answer("the answer the reader tried to stop")]):
        chat = Chat(served.page(browser))
        chat.ask("take your time")
        expect(chat.stop).to_be_visible()
        chat.stop.click()
        expect(chat.notices).to_have_text(["Stopped."], timeout=2_000)
        expect(chat.input).to_be_editable(timeout=2_000)
        expect(chat.locator(".bubble.notice.error")).to_have_count(0)  # a stop is not an error
        assert chat.answers.count() == 0


def test_stop_between_model_calls_shows_the_stopped_notice_and_enables_input(
    browser: Browser, served: Served
) -> None:
    """The cancel lands while the second call is held; the turn stops before a third."""
    script = [READ_TODO, HOLD, READ_TODO, scripts.answer("never shown")]
    with served.answering(script):
        chat = Chat(served.page(browser))
        chat.ask(TODO)
        expect(chat.caption).to_have_text("Read a file")
        with chat.page.expect_response(lambda r: r.url.endswith("/cancel")) as cancel:
            chat.stop.click()
        assert cancel.value.status == 202
        served.model.release()
        expect(chat.notices).to_have_text(["Stopped."])
        expect(chat.locator(".bubble.notice.error")).to_have_count(0)  # a stop is not an error
        expect(chat.input).to_be_editable()
        expect(chat.caption).to_have_text("")
        assert chat.answers.count() == 0
    assert len(served.model.requests) == 2


def test_the_demo_model_answers_in_the_browser(browser: Browser, tmp_path: Path) -> None:
    """What a newcomer sees: `serve` with no provider configured, then the printed address."""
    with serving([], tmp_path, provider="demo") as served:
        chat = Chat(served.page(browser))
        chat.ask("hello")
        expect(chat.answers).to_contain_text(["ANTHROPIC_API_KEY"])
        captions = chat.captions_shown()
        chat.ask(TODO)
        expect(chat.answers.nth(1)).to_have_text("your todos: write tests")
        assert "Read a file" in captions(), "the demo answers through read_file, visibly"


def test_a_key_missing_in_a_locale_falls_back_to_english_and_an_unknown_key_shows_nothing(
    browser: Browser, served: Served
) -> None:
    """The server only publishes keys it knows; here the page is shown a state it could not
    publish (the polls answered by the test), to see what the widget does with it."""
    with served.answering([scripts.answer("real answer, not polled")]):
        page = served.page(browser, locale="es-ES")
        chat = Chat(page)

        def catalog_without_truncation(route: Route) -> None:
            catalog = route.fetch().json()
            del catalog["errors.ai_truncated"]
            route.fulfill(json=catalog)

        states = [
            {"version": 1, "done": False, "activity": "activity.mystery_tool", "messages": []},
            {
                "version": 2,
                "done": True,
                "activity": None,
                "messages": [
                    {"id": "m1", "role": "user", "text": "hola"},
                    {"id": "m2", "role": "bot", "key": "errors.ai_truncated", "is_error": True},
                    {"id": "m3", "role": "bot", "key": "errors.no_such_key", "is_error": True},
                ],
            },
        ]

        def published(route: Route) -> None:
            if len(states) == 2:
                route.fulfill(json=states.pop(0))  # running: an unknown activity
                return
            if release.is_set():
                route.fulfill(json=states[-1])
            else:
                route.fulfill(status=204)  # nothing new: the caption stays

        release = threading.Event()
        page.route("**/locales/es.json", catalog_without_truncation)
        page.route("**/api/turns/*", published)
        page.reload()
        chat.ask("hola")
        expect(chat.caption).to_have_text("Trabajando…")  # never the key, nor the tool's name
        release.set()
        expect(chat.notices).to_have_text(
            ["The answer was cut off before it was complete, so it is not shown."]
        )
        expect(chat.input).to_be_editable()
        shown = page.locator("turnkeeper-chat").inner_text()
        assert "errors." not in shown
        assert "mystery" not in shown
        expect(chat.texts).to_have_count(2)
        expect(chat.texts.first).to_have_text("hola")
