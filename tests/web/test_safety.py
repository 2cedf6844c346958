"""What the widget must never do, in a real browser: run model markup, put the token in a URL,
poll forever, spin silently when the server is unreachable, or overflow a 320 px screen."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from bench.local_server import LocalServer
from playwright.sync_api import Browser, Page, Route, expect

from tests import scripts
from tests.fake_model import HOLD
from tests.test_server import free_port
from tests.web.chat import Chat
from tests.web.conftest import Served, serving

pytestmark = pytest.mark.browser

MARKUP = '<img src=x onerror="window.pwned = 1"><script>window.pwned = 2</script> <b>bold</b>'


def test_model_text_with_markup_is_shown_as_text_and_runs_nothing(
    browser: Browser, served: Served
) -> None:
    with served.answering([scripts.answer(MARKUP)]):
        chat = Chat(served.page(browser))
        chat.ask("show me some html")
        expect(chat.answers).to_have_text([MARKUP])
        assert chat.locator("img, script, b").count() == 0
        assert chat.page.evaluate("window.pwned") is None


def test_the_token_travels_only_in_the_authorization_header(
    browser: Browser, served: Served
) -> None:
    with served.answering([scripts.answer("one"), scripts.answer("two")]):
        chat = Chat(served.page(browser))
        requests = chat.requests()
        chat.ask("first")
        expect(chat.answers).to_have_text(["one"])
        chat.page.reload()
        chat.ask("second")
        expect(chat.answers).to_have_text(["one", "two"])
        token = chat.stored()["token"]
    api = [r for r in requests if "/api/" in r.url and r.url != f"{served.base}/api/conversations"]
    assert {r.url.split("/api/")[1].split("/")[0] for r in api} == {"conversations", "turns"}
    assert all(r.headers["authorization"] == f"Bearer {token}" for r in api)
    assert not [r.url for r in requests if token in r.url]


def test_polling_stops_once_the_turn_is_done(browser: Browser, served: Served) -> None:
    with served.answering([scripts.answer("done")]):
        chat = Chat(served.page(browser))
        chat.page.clock.install()
        requests = chat.requests()
        chat.ask("hello")
        expect(chat.answers).to_have_text(["done"])
        polls = [r.url for r in requests if "/api/turns/" in r.url]
        chat.page.clock.run_for(10 * 60 * 1000)  # every timer the widget set fires now
        # A request issued after run_for: any poll those timers started comes before it.
        assert chat.page.evaluate("fetch('/openapi.json').then(r => r.status)") == 200
        assert polls
        assert [r.url for r in requests if "/api/turns/" in r.url] == polls


def test_failed_polls_say_so_in_the_readers_language_then_recover(
    browser: Browser, served: Served
) -> None:
    with served.answering([scripts.answer("made it")]):
        page = served.page(browser, locale="es-ES")
        chat = Chat(page)
        failed: list[str] = []

        def unreachable(route: Route) -> None:
            failed.append(route.request.url)
            route.abort("connectionrefused")

        page.route("**/api/turns/*", unreachable)
        chat.ask("hola")
        expect(chat.trouble).to_have_text(
            "No se puede contactar con el asistente ahora mismo. Seguimos intentándolo…"
        )
        expect(chat.trouble).to_be_visible()
        assert len(failed) >= 3
        page.unroute("**/api/turns/*")
        expect(chat.answers).to_have_text(["made it"])
        expect(chat.trouble).to_be_hidden()
        expect(chat.input).to_be_editable()


TIMED_POLLS = """() => {
    window.pollTimes = [];
    window.pollsInFlight = 0;
    const send = window.fetch;
    window.fetch = (url, options) => {
        const sent = send(url, options);
        if (String(url).includes("/api/turns/") && !String(url).includes("/events")) {
            window.pollTimes.push(Date.now());
            window.pollsInFlight += 1;
            // Read by the test in a task of its own, after every microtask: the widget has
            // handled a 204 or a failure by then (the answers these tests time).
            sent.then(() => {}, () => {}).finally(() => { window.pollsInFlight -= 1; });
        }
        return sent;
    };
}"""
"""Each poll's time on the page's clock, noted as it is sent, and how many are unanswered."""


class Polls:
    """The polls a page sends, timed on its clock, installed and paused: only `run` moves
    it, so the times are exact. The requests themselves are real."""

    START = datetime(2026, 1, 1, tzinfo=UTC)

    def __init__(self, page: Page) -> None:
        self.page = page
        page.evaluate(TIMED_POLLS)
        page.clock.install(time=self.START)
        page.clock.pause_at(self.START + timedelta(seconds=5))

    def run(self, until_ms: int, step_ms: int = 50) -> list[int]:
        """Move the clock `until_ms` on in steps; when each poll was sent meanwhile (ms from
        the start of the run). First, until the widget follows its turn (its first poll
        set); then, before the clock moves, after each step and at the end, until the polls
        sent are answered and handled: the widget's next timer is set before the clock
        moves on, and nothing is in flight when the run returns."""
        self.until(FOLLOWING, "the widget following its turn")
        self.until(ANSWERED, "every poll answered")
        start, seen = self.page.evaluate("[Date.now(), window.pollTimes.length]")
        self.page.clock.run_for(0)  # a poll due now is answered before the clock moves
        for _ in range(until_ms // step_ms):
            self.until(ANSWERED, "every poll answered")
            self.page.clock.run_for(step_ms)
        self.until(ANSWERED, "every poll answered")
        times: list[int] = self.page.evaluate("window.pollTimes")
        return [t - start for t in times[seen:]]

    def until(self, expression: str, what: str, bound: float = 10.0) -> None:
        """Poll the page until `expression` holds, with a bound (the page cannot be asked to
        wait: its own timers are the paused clock's)."""
        deadline = time.monotonic() + bound
        while not self.page.evaluate(expression):
            assert time.monotonic() < deadline, f"{what}: not within {bound} s"


ANSWERED = "window.pollsInFlight === 0"
FOLLOWING = "Object.keys(localStorage).some(k => JSON.parse(localStorage[k]).turn_id)"
"""The widget has its turn's id, and has set its first poll (`follow`)."""


def test_failed_polls_back_off_doubling_up_to_eight_seconds(
    browser: Browser, served: Served
) -> None:
    with served.answering([scripts.answer("made it")]):
        chat = Chat(served.page(browser))
        polls = Polls(chat.page)
        chat.page.route("**/api/turns/*", lambda route: route.abort("connectionrefused"))
        chat.ask("hello")
        sent = polls.run(32_000, step_ms=100)
        gaps = [b - a for a, b in itertools.pairwise(sent)]
        # 0.5, 1, 2, 4 s between failed polls, then 8 s for good.
        assert gaps[:4] == [500, 1000, 2000, 4000], gaps
        assert set(gaps[4:]) == {8000}, gaps


def show_as(page: Page, visibility: str) -> None:
    """The tab hidden or shown, as the browser says it when the reader switches tabs."""
    page.evaluate(
        """visibility => {
            Object.defineProperty(document, "visibilityState", {
                configurable: true, get: () => visibility,
            });
            document.dispatchEvent(new Event("visibilitychange"));
        }""",
        visibility,
    )


def test_a_hidden_tab_polls_every_five_seconds_and_at_once_when_shown_again(
    browser: Browser, served: Served
) -> None:
    with served.answering([HOLD, scripts.answer("made it")]):
        chat = Chat(served.page(browser))
        # The pace of polling alone: no event stream (while one is read, polls are seldom).
        chat.page.route("**/api/turns/*/events*", lambda route: route.fulfill(status=404))
        polls = Polls(chat.page)
        chat.ask("hello")
        visible = polls.run(4_000)
        assert len(visible) >= 4, visible  # 0.3 s, then up to 1.5 s apart
        show_as(chat.page, "hidden")
        hidden = polls.run(16_000, step_ms=100)
        assert hidden[0] == 0, hidden  # the change itself is a reason to look
        gaps = [b - a for a, b in itertools.pairwise(hidden)]
        assert gaps == [5_000, 5_000, 5_000], gaps
        show_as(chat.page, "visible")
        shown = polls.run(2_000)
        assert shown[0] == 0, shown  # at once
        assert shown[1] - shown[0] <= 1_500, shown  # then the visible pace, not 5 s


def test_a_320_pixel_screen_fits_without_horizontal_scrolling(
    browser: Browser, served: Served
) -> None:
    long = "a-very-long-word-" * 20 + " and https://example.com/" + "x" * 120
    with served.answering([scripts.answer(long)]):
        chat = Chat(served.page(browser, viewport={"width": 320, "height": 568}))
        chat.ask("x" * 200)
        expect(chat.answers).to_have_text([long])
        width = chat.page.evaluate("document.documentElement.scrollWidth")
        log = chat.locator(".log").evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert width <= 320
        assert log[0] <= log[1]
        for part in (chat.input, chat.send):
            box = part.bounding_box()
            assert box is not None
            assert box["x"] >= 0
            assert box["x"] + box["width"] <= 320


def test_bubbles_and_the_caption_are_announced(browser: Browser, served: Served) -> None:
    with served.answering([scripts.answer("hi")]):
        chat = Chat(served.page(browser))
        chat.ask("hello")
        expect(chat.answers).to_have_text(["hi"])
        assert chat.locator(".log").get_attribute("aria-live") == "polite"
        assert chat.locator(".caption").get_attribute("aria-live") == "polite"
        assert chat.locator(".trouble").get_attribute("role") == "alert"


@contextmanager
def page_server(html: str) -> Iterator[str]:
    """Another origin on this machine (its own port) serving one page; its address."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = html.encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with LocalServer(Page) as server:
        yield server.url


@pytest.mark.parametrize("allowed", [True, False])
def test_only_pages_of_an_allowed_origin_can_embed_the_chat(
    browser: Browser, tmp_path: Path, allowed: bool
) -> None:
    """`serve --cors-origin ORIGIN`: a page of another site chats with the API across origins;
    without the option, the browser refuses (no CORS by default)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    embed = (
        f'<!doctype html><meta charset="utf-8"><script src="{base}/widget.js"></script>'
        f'<turnkeeper-chat api="{base}"></turnkeeper-chat>'
    )
    with page_server(embed) as origin:
        cors = ["--cors-origin", origin] if allowed else []
        script = [scripts.answer("from afar")]
        with serving(script, tmp_path, "--port", str(port), *cors) as served:
            page = served.page(browser)
            chat = Chat(page)
            if allowed:
                page.goto(origin)
                chat.ask("hello from another site")
                expect(chat.answers).to_have_text(["from afar"])
            else:
                refused = page.expect_event("requestfailed", lambda r: "/locales/" in r.url)
                with refused:
                    page.goto(origin)
                expect(chat.input).to_have_count(0)
