"""The widget watching a turn live, in a real browser: `turnkeeper serve live:assistant`
(tests/web/apps/live.py), its model the fake streaming its answers with gaps. The answer
grows in the page before the turn is done, its Markdown never shown as raw syntax; a tool
step shows as it starts and as it ends; a cut answer's streamed text is withdrawn for the
notice; a reload mid-answer shows the whole answer once; and without the event stream the
widget still answers, by polling. A screenshot of an answer mid-way goes to test-results/.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from tests import scripts
from tests.fake_model import HOLD
from tests.web.chat import Chat
from tests.web.conftest import RESULTS, Served, serving

pytestmark = pytest.mark.browser

APPS = Path(__file__).resolve().parent / "apps"
GAP = 0.12
"""Seconds between the fake model's stream events: an answer takes a few seconds to come."""
ANSWER = (
    "Your parcel **left the depot** this morning and is on its way to you. "
    "It travels with the *regional* courier, who delivers between nine and five. "
    "Keep the reference `A-1001` at hand, and watch for a text message before the van "
    "arrives; if nobody is home, the courier leaves a card with a number to call."
)
SHOWN = (
    "Your parcel left the depot this morning and is on its way to you. "
    "It travels with the regional courier, who delivers between nine and five. "
    "Keep the reference A-1001 at hand, and watch for a text message before the van "
    "arrives; if nobody is home, the courier leaves a card with a number to call."
)
"""ANSWER as the reader reads it, its Markdown rendered."""

RECORD = """() => {
    const root = document.querySelector("turnkeeper-chat").shadowRoot;
    const log = root.querySelector(".log");
    const stop = root.querySelector("button.stop");
    const texts = (selector) => [...log.querySelectorAll(selector)].map((e) => e.innerText);
    window.seen = [];
    const record = () => window.seen.push({
        answers: texts(".bubble.bot:not(.notice) .text"),
        live: texts(".bubble.live:not(.notice) .text"),
        notices: texts(".bubble.notice .text"),
        steps: [...log.querySelectorAll(".step")].map((e) => [e.className, e.innerText]),
        busy: !stop.hidden,
    });
    new MutationObserver(record).observe(
        log, {childList: true, subtree: true, characterData: true, attributes: true});
    record();
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The live desk's assistant, for every test of this module."""
    app = ("live:assistant", "--app-dir", str(APPS))
    with serving([], tmp_path_factory.mktemp("live"), *app) as served:
        yield served


@pytest.fixture
def streaming(served: Served) -> Iterator[Served]:
    """The fake model streams its answers `GAP` seconds apart per event."""
    served.model.gap = GAP
    yield served
    served.model.gap = 0.0


def recording(page: Page) -> None:
    """From now on, what the log shows after every change, in `window.seen`."""
    expect(page.locator("turnkeeper-chat textarea")).to_be_visible()
    page.evaluate(RECORD)


def seen(page: Page) -> list[dict[str, Any]]:
    return list(page.evaluate("window.seen"))


def until_seen(page: Page, condition: str) -> None:
    """Until some record of `window.seen` satisfies `condition` (JavaScript of `s`)."""
    page.wait_for_function(f"() => window.seen.some((s) => {condition})", timeout=20_000)


def done(chat: Chat) -> None:
    """The turn is over: Send is back."""
    expect(chat.send).to_be_visible(timeout=20_000)


def test_the_answer_grows_in_the_page_before_the_turn_is_done(
    browser: Browser, streaming: Served
) -> None:
    streaming.answering([scripts.answer(ANSWER)])
    page = streaming.page(browser, viewport={"width": 760, "height": 700})
    chat = Chat(page)
    recording(page)
    chat.ask("where is my parcel?")
    until_seen(page, "s.busy && s.live.length === 1 && s.live[0].includes('the regional')")
    RESULTS.mkdir(exist_ok=True)
    page.screenshot(path=str(RESULTS / "widget-streaming.png"))
    done(chat)
    expect(chat.answers).to_have_text([SHOWN])
    partial = [s["live"][0] for s in seen(page) if s["busy"] and s["live"]]
    assert partial, "no text was shown while the turn ran"
    assert any(0 < len(text) < len(SHOWN) // 2 for text in partial), partial
    assert all(SHOWN.startswith(text.strip()) for text in partial), partial
    assert not [text for text in partial if "**" in text or "`" in text or "*" in text]
    assert all(len(s["answers"]) <= 1 for s in seen(page)), "the answer was drawn twice"
    assert streaming.model.streamed >= 1


def test_a_tool_step_shows_as_it_starts_and_as_it_ends(
    browser: Browser, streaming: Served, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    look_up = scripts.tool_use("slow_lookup", {"gate": str(gate)})
    streaming.answering(
        [scripts.asks(look_up, say="Let me look."), HOLD, scripts.answer("Found it.")]
    )
    with streaming:
        page = streaming.page(browser)
        chat = Chat(page)
        recording(page)
        chat.ask("where is my parcel?")
        running = chat.locator(".step.running")
        expect(running).to_have_text("Working…")
        expect(chat.answers).to_have_text(["Let me look."])
        gate.touch()
        ended = chat.locator(".step.ended")
        expect(ended).to_have_text("Looked it up")
        expect(running).to_have_count(0)
        assert chat.send.is_hidden(), "the turn is still running: the model call is held"
        streaming.model.release()
        done(chat)
    expect(chat.answers).to_have_text(["Let me look.", "Found it."])
    expect(chat.locator(".step")).to_have_count(0)  # what the published state holds stays
    steps = [s["steps"] for s in seen(page) if s["steps"]]
    assert [["step running", "Working…"]] in steps
    assert [["step ended", "Looked it up"]] in steps


def test_a_cut_answers_streamed_text_is_withdrawn_for_the_notice(
    browser: Browser, streaming: Served
) -> None:
    streaming.answering([scripts.body([scripts.text(ANSWER)], "max_tokens")])
    page = streaming.page(browser)
    chat = Chat(page)
    recording(page)
    chat.ask("where is my parcel?")
    until_seen(page, "s.busy && s.live.length === 1 && s.live[0].includes('the depot')")
    done(chat)
    expect(chat.notices).to_have_text(
        ["The answer was cut off before it was complete, so it is not shown."]
    )
    expect(chat.answers).to_have_count(0)
    final = seen(page)[-1]
    assert final["answers"] == []
    assert final["live"] == []


def test_a_reload_mid_answer_shows_the_whole_answer_once(
    browser: Browser, streaming: Served
) -> None:
    streaming.answering([scripts.answer(ANSWER)])
    page = streaming.page(browser)
    chat = Chat(page)
    recording(page)
    chat.ask("where is my parcel?")
    until_seen(page, "s.busy && s.live.length === 1 && s.live[0].includes('depot')")
    page.reload()
    recording(page)
    # After the reload the answer so far is replayed from the start of the turn's log.
    until_seen(page, "s.busy && s.live.length === 1 && s.live[0].startsWith('Your parcel')")
    done(chat)
    expect(chat.answers).to_have_text([SHOWN])
    expect(chat.questions).to_have_text(["where is my parcel?"])
    for record in seen(page):
        assert len(record["answers"]) <= 1, record
        assert all(SHOWN.startswith(text.strip()) for text in record["answers"]), record


def test_without_the_event_stream_the_widget_answers_by_polling(
    browser: Browser, streaming: Served
) -> None:
    streaming.answering([scripts.answer(ANSWER)])
    page = streaming.page(browser)
    refused: list[str] = []

    def fail(route: Route) -> None:
        refused.append(route.request.url)
        route.fulfill(status=500, content_type="application/json", body='{"error": "down"}')

    page.route("**/api/turns/*/events*", fail)
    chat = Chat(page)
    chat.ask("where is my parcel?")
    done(chat)
    expect(chat.answers).to_have_text([SHOWN])
    assert refused, "the widget never asked for the event stream"
    expect(chat.trouble).to_have_text("")
