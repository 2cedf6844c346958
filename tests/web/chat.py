"""The widget as a reader sees it: its parts by role and class, inside `<turnkeeper-chat>`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from playwright.sync_api import Locator, Page, Request, expect

from tests import scripts

TODO = "what's on my todo list?"
READ_TODO = scripts.body([scripts.tool_use("read_file", {"path": "todo.txt"})], "tool_use")
"""The model asks for `read_file`; the reader then sees the caption "Read a file"."""


class Chat:
    def __init__(self, page: Page) -> None:
        self.page = page
        root = page.locator("turnkeeper-chat")
        self.input = root.locator("textarea")
        self.send = root.locator("button.send")
        self.stop = root.locator("button.stop")
        self.caption = root.locator(".caption")
        self.trouble = root.locator(".trouble")
        self.bubbles = root.locator("[aria-live] .bubble")
        self.texts = self.bubbles.locator(".text")
        """Every bubble's text, in order; `expect(chat.texts).to_have_text([...])` waits for
        the rendered text (an answer's markdown is laid out after its bubble appears)."""
        self.questions = root.locator(".bubble.user .text")
        self.answers = root.locator(".bubble.bot:not(.notice) .text")
        self.notices = root.locator(".bubble.notice .text")

    def ask(self, question: str) -> None:
        """Ask as a reader would: once the widget shows it can send, type and press Enter;
        the question's bubble shows the widget took it. The reader's own bubbles are the ones
        looked at: a quick answer may already stand below the question."""
        expect(self.send).to_be_visible()
        self.input.fill(question)
        self.input.press("Enter")
        expect(self.questions.last).to_have_text(question)

    def captions_shown(self) -> Callable[[], list[str]]:
        """From now on, every text the caption shows, however briefly; call the result to
        read them."""
        self.page.evaluate(
            """() => {
                const chat = document.querySelector("turnkeeper-chat");
                const caption = chat.shadowRoot.querySelector(".caption");
                window.captionsShown = [];
                new MutationObserver(() => window.captionsShown.push(caption.textContent))
                    .observe(caption, {childList: true, characterData: true, subtree: true});
            }"""
        )
        return lambda: list(self.page.evaluate("window.captionsShown"))

    def requests(self) -> list[Request]:
        """Every request the page makes from now on."""
        seen: list[Request] = []
        self.page.on("request", lambda request: seen.append(request))
        return seen

    def stored(self) -> Any:
        """The conversation the widget keeps in localStorage."""
        return self.page.evaluate(
            "JSON.parse(localStorage.getItem(Object.keys(localStorage)"
            ".find(k => k.startsWith('turnkeeper-chat:'))))"
        )

    def locator(self, selector: str) -> Locator:
        return self.page.locator("turnkeeper-chat").locator(selector)
