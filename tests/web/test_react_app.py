"""The React app (examples/react) as a developer ships it (issue 44): built with `vite build`,
served from an origin of its own, driven in Chromium against `turnkeeper serve
payments:assistant --cors-origin ORIGIN` and its fake model. Both pages, `useChat` with
`DefaultChatTransport` (#chat) and `HttpAgent` (#ag-ui), show the answer as it streams,
a tool call and its result, an approval given, a Stop that stops the turn on the server,
and, after a reload mid-answer, the whole conversation with the answer resuming.

The app's packages come from `npm ci --prefix examples/react` (scripts/test runs it);
without them these tests are skipped, except under CI.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests import scripts
from tests.web.conftest import Served, serving

pytestmark = pytest.mark.browser

REACT = Path(__file__).resolve().parents[2] / "examples" / "react"
APPS = Path(__file__).resolve().parents[1] / "apps"
PAGES = ["chat", "ag-ui"]
KEYS = {"chat": "turnkeeper.chat", "ag-ui": "turnkeeper.ag-ui"}
"""Where each page keeps its conversation's id and token (localStorage)."""
GAP = 0.1
"""Seconds between the fake model's stream events: a long answer takes seconds."""
LONG = " ".join(f"word{n}" for n in range(60))
DELETE = scripts.asks(scripts.tool_use("delete_file", {"path": "notes.txt"}))


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app, built once for this module, served from a second origin."""
    if shutil.which("npx") is None or not (REACT / "node_modules").is_dir():
        if os.environ.get("CI"):
            pytest.fail("the React app needs npm and `npm ci --prefix examples/react`")
        pytest.skip("the React app needs npm and `npm ci --prefix examples/react`")
    dist = tmp_path_factory.mktemp("react") / "dist"
    argv = ["npx", "--no-install", "vite", "build", "--outDir", str(dist), "--emptyOutDir"]
    built = subprocess.run(argv, cwd=REACT, capture_output=True, timeout=300, check=False)
    assert built.returncode == 0, built.stdout.decode() + built.stderr.decode()
    with static(dist) as served:
        yield served


@contextmanager
def static(folder: Path) -> Iterator[str]:
    """A plain static file server for `folder` on a free port: the app's own origin."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=folder))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def server(origin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    app = ("payments:assistant", "--app-dir", str(APPS), "--cors-origin", origin)
    with serving([], tmp_path_factory.mktemp("react-serve"), *app) as served:
        yield served


@pytest.fixture
def streaming(served: Served) -> Iterator[Served]:
    """The fake model streams its answers `GAP` seconds apart per event."""
    served.model.gap = GAP
    yield served
    served.model.gap = 0.0


class App:
    """One page of the app as a reader sees it (both pages share their classes)."""

    def __init__(self, page: Page, name: str, origin: str, server: str) -> None:
        self.page, self.name = page, name
        self.turns: list[str] = []
        """Every turn a response followed (its `x-turnkeeper-turn`), in order."""
        self.errors: list[str] = []
        """Every uncaught error of the page (React unmounts the app on a rendering error)."""
        page.on("response", self._seen)
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.goto(f"{origin}/?server={server}#{name}")
        self.input = page.locator(".composer input")
        self.send = page.locator("button.send")
        self.stop = page.locator("button.stop")
        self.questions = page.locator(".message.user .text")
        self.answers = page.locator(".message.assistant .text")
        self.calls = page.locator(".tool-call")
        self.outputs = page.locator(".tool-output")

    def _seen(self, response: Any) -> None:
        turn = response.headers.get("x-turnkeeper-turn")
        if turn and turn not in self.turns:
            self.turns.append(turn)

    def ask(self, question: str) -> None:
        expect(self.send).to_be_visible()
        self.input.fill(question)
        self.send.click()
        expect(self.questions.last).to_have_text(question)

    def token(self) -> str:
        kept = self.page.evaluate(f"JSON.parse(localStorage.getItem('{KEYS[self.name]}'))")
        return str(kept["token"])

    def state(self, base: str) -> dict[str, Any]:
        """The last turn's state on the server."""
        auth = {"authorization": f"Bearer {self.token()}"}
        got = httpx.get(f"{base}/api/turns/{self.turns[-1]}", headers=auth, timeout=10)
        assert got.status_code == 200, got.text
        body: dict[str, Any] = got.json()
        return body


Opener = Callable[[str, Served], App]
"""Opens a page of the app (`chat`, `ag-ui`) on a server, in a fresh browser profile."""


@pytest.fixture
def opened(browser: Browser, origin: str) -> Iterator[Opener]:
    """Open a page of the app in a fresh profile; after the test, no page had an error."""
    apps: list[App] = []

    def open_page(name: str, served: Served) -> App:
        apps.append(App(browser.new_context().new_page(), name, origin, served.base))
        return apps[-1]

    yield open_page
    assert [e for app in apps for e in app.errors] == []


@pytest.mark.parametrize("name", PAGES)
def test_the_answer_streams_in(opened: Opener, streaming: Served, name: str) -> None:
    streaming.answering([scripts.answer(LONG)])
    app = opened(name, streaming)
    app.ask("tell me a long story")
    expect(app.answers.last).to_contain_text("word3")
    shown = app.answers.last.inner_text()
    assert "word59" not in shown, "the answer came in one piece"
    expect(app.stop).to_be_visible()
    expect(app.answers.last).to_have_text(LONG, timeout=30_000)
    expect(app.send).to_be_visible()
    expect(app.page.locator(".error")).to_have_count(0)  # a new chat's resume found nothing
    assert app.state(streaming.base)["status"] == "finished"


@pytest.mark.parametrize("name", PAGES)
def test_a_tool_call_and_its_result_show(opened: Opener, served: Served, name: str) -> None:
    look_up = scripts.asks(scripts.tool_use("look_up", {"query": "tea"}))
    served.answering([look_up, scripts.answer("Tea is found.")])
    app = opened(name, served)
    app.ask("find tea")
    expect(app.answers.last).to_have_text("Tea is found.")
    expect(app.calls).to_have_text(['look_up({"query":"tea"})'])
    expect(app.outputs).to_have_text(["found tea"])


@pytest.mark.parametrize("name", PAGES)
def test_an_approval_is_given_and_the_tool_runs(opened: Opener, served: Served, name: str) -> None:
    served.answering([DELETE, scripts.answer("Your notes are gone.")])
    app = opened(name, served)
    app.ask("delete my notes")
    expect(app.calls).to_have_text(['delete_file({"path":"notes.txt"})'])
    assert app.state(served.base)["status"] == "waiting"
    app.page.locator("button.approve").click()
    expect(app.answers.last).to_have_text("Your notes are gone.")
    expect(app.outputs).to_have_text(["deleted notes.txt"])
    expect(app.page.locator("button.approve")).to_have_count(0)
    assert app.state(served.base)["status"] == "finished"
    result = served.model.requests[-1]["messages"][-1]["content"][0]
    assert result["content"] == "deleted notes.txt"


@pytest.mark.parametrize("name", PAGES)
def test_stop_stops_the_turn_on_the_server(opened: Opener, streaming: Served, name: str) -> None:
    streaming.answering([scripts.answer(LONG)])
    app = opened(name, streaming)
    app.ask("tell me a long story")
    expect(app.answers.last).to_contain_text("word2")
    app.stop.click()
    expect(app.send).to_be_visible()
    state = app.state(streaming.base)
    assert state["status"] == "stopped", state
    assert "word59" not in app.page.locator("main").inner_text()


@pytest.mark.parametrize("name", PAGES)
def test_a_reload_mid_answer_shows_the_conversation_and_resumes(
    opened: Opener, streaming: Served, name: str
) -> None:
    streaming.answering([scripts.answer("First answer."), scripts.answer(LONG)])
    app = opened(name, streaming)
    app.ask("first question")
    expect(app.answers.last).to_have_text("First answer.")
    app.ask("second question")
    expect(app.answers.last).to_contain_text("word3")
    app.page.reload()
    expect(app.questions).to_have_text(["first question", "second question"])
    expect(app.answers.first).to_have_text("First answer.")
    expect(app.stop).to_be_visible()
    expect(app.answers).to_have_text(["First answer.", LONG], timeout=30_000)
    expect(app.send).to_be_visible()
    assert app.state(streaming.base)["status"] == "finished"
    assert len(streaming.model.requests) == 2, "the reload asked the model again"
