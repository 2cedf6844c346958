"""Issue 33 in a real browser (tests/web/apps/notes.py), in English, Spanish and German (the
app's own catalog), on a desktop and a 390 px phone: the approval card says what the tool
is to do, Deny looks unlike Approve, the decision stays in the transcript after a reload,
answers take a thumbs up or down, and the list of conversations renames, deletes (after
asking) and gets out of the way.

Screenshots of each go to test-results/ (docs/ keeps a chosen few, shown in the README).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, expect

from tests import scripts
from tests.web.chat import Chat
from tests.web.conftest import RESULTS, Served, serving
from tests.web.test_cards import signed_in

pytestmark = pytest.mark.browser

APPS = Path(__file__).resolve().parent / "apps"
DESKTOP = {"width": 900, "height": 820}
PHONE = {"width": 390, "height": 844}
WORDS = {
    "en-US": {
        "title": "The assistant wants to do this:",
        "ask": "Delete a note",
        "unknown": "Run archive_note?",
        "approve": "Approve",
        "deny": "Deny",
        "approved": "You approved: Delete a note",
        "denied": "You denied: archive_note",
        "confirm": "Delete this conversation and everything in it? This cannot be undone.",
    },
    "es-ES": {
        "title": "El asistente quiere hacer esto:",
        "ask": "Borrar una nota",
        "unknown": "¿Ejecutar archive_note?",
        "approve": "Aprobar",
        "deny": "Rechazar",
        "approved": "Aprobaste: Borrar una nota",
        "denied": "Rechazaste: archive_note",
        "confirm": "¿Eliminar esta conversación y todo su contenido? No se puede deshacer.",
    },
    "de-DE": {
        "title": "Der Assistent möchte Folgendes tun:",
        "ask": "Eine Notiz löschen",
        "unknown": "archive_note ausführen?",
        "approve": "Erlauben",
        "deny": "Ablehnen",
        "approved": "Du hast erlaubt: Eine Notiz löschen",
        "denied": "Du hast abgelehnt: archive_note",
        "confirm": (
            "Diese Unterhaltung mit allem Inhalt löschen? Das lässt sich nicht rückgängig machen."
        ),
    },
}
DELETE = scripts.asks(scripts.tool_use("delete_note", {"title": "groceries", "folder": "home"}))
ARCHIVE = scripts.asks(scripts.tool_use("archive_note", {"title": "old"}))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    app = ("notes:assistant", "--app-dir", str(APPS))
    with serving([], tmp_path_factory.mktemp("notes"), *app) as served:
        yield served


def shot(part: Locator, name: str) -> None:
    RESULTS.mkdir(exist_ok=True)
    part.screenshot(path=str(RESULTS / f"{name}.png"))


def style(button: Locator, prop: str) -> str:
    return str(button.evaluate(f"(b) => getComputedStyle(b).{prop}"))


def feedback(served: Served) -> list[dict[str, object]]:
    """`turnkeeper feedback` on the served store: every rating, as JSON lines."""
    url = f"sqlite:///{served.log.parent / 'tk.db'}"
    out = subprocess.run(
        [sys.executable, "-m", "turnkeeper", "feedback", "--database", url, "--since", "1h"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.mark.parametrize(
    ("locale", "viewport"),
    [("en-US", DESKTOP), ("es-ES", PHONE), ("de-DE", PHONE)],
    ids=["en-desktop", "es-phone", "de-phone"],
)
def test_the_card_asks_in_the_readers_words_and_the_decision_stays(
    browser: Browser, served: Served, locale: str, viewport: dict[str, int]
) -> None:
    words, name = WORDS[locale], f"{locale}-{viewport['width']}"
    script = [DELETE, scripts.answer("Gone."), ARCHIVE, scripts.answer("Kept it.")]
    with served.answering(script):
        page = signed_in(browser, served, f"approver-{name}", locale=locale, viewport=viewport)
        chat = Chat(page)
        chat.ask("delete my groceries note")
        card = chat.locator(".approval")
        expect(card.locator(".approval-title")).to_have_text(words["title"])
        expect(card.locator(".approval-what")).to_have_text(words["ask"])
        expect(card.locator(".approval-input")).to_have_text("title: groceries\nfolder: home")
        approve, deny = card.locator("button.approve"), card.locator("button.deny")
        expect(approve).to_have_text(words["approve"])
        expect(deny).to_have_text(words["deny"])
        assert style(approve, "backgroundColor") != style(deny, "backgroundColor")
        assert style(deny, "borderTopWidth") != "0px", "Deny is outlined, Approve filled"
        expect(deny).to_be_in_viewport()
        shot(card, f"approval-card-{name}")
        told = f"You keep approver-{name}'s notes. Answer in {locale[:2]}."
        assert served.model.requests[0]["system"][0]["text"] == told  # the turn's own
        approve.click()
        decision = chat.locator(".bubble.decision")
        expect(decision).to_have_text(words["approved"])
        expect(chat.answers.last).to_have_text("Gone.")
        thumbs = chat.locator(".bubble.bot .rating")
        expect(thumbs).to_have_count(1)
        shot(chat.locator("section.chat"), f"decision-{name}")

        page.reload()
        chat = Chat(page)
        expect(chat.locator(".bubble.decision")).to_have_text(words["approved"])
        up = chat.locator(".rate-up")
        expect(up).to_have_count(1)
        up.click()
        expect(up).to_have_attribute("aria-pressed", "true")
        expect(chat.locator(".rate-down")).to_have_attribute("aria-pressed", "false")

        chat.ask("archive the old one")
        card = chat.locator(".approval")
        expect(card.locator(".approval-what")).to_have_text(words["unknown"])
        expect(card.locator(".approval-title")).to_have_count(0)
        card.locator("button.deny").click()
        expect(chat.locator(".bubble.decision").last).to_have_text(words["denied"])
        expect(chat.answers.last).to_have_text("Kept it.")
    rated = [r for r in feedback(served) if r["user"] == f"approver-{name}"]
    assert [(r["rating"], r["outcome"]) for r in rated] == [("up", "finished")]
    page.context.close()


def titles(chat: Chat) -> Locator:
    return chat.locator(".thread-title")


@pytest.mark.parametrize(
    ("locale", "viewport"),
    [("en-US", PHONE), ("es-ES", DESKTOP), ("de-DE", DESKTOP)],
    ids=["en-phone", "es-desktop", "de-desktop"],
)
def test_the_list_renames_deletes_and_gets_out_of_the_way(
    browser: Browser, served: Served, locale: str, viewport: dict[str, int]
) -> None:
    name = f"{locale}-{viewport['width']}"
    script = [scripts.answer("one"), scripts.answer("two"), scripts.answer("three")]
    with served.answering(script):
        page = signed_in(browser, served, f"lister-{name}", locale=locale, viewport=viewport)
        chat = Chat(page)
        toggle, listed = chat.locator(".history-toggle"), chat.locator(".history-list")
        chat.ask("first?")
        expect(chat.answers.last).to_have_text("one")
        chat.locator(".new").click()
        chat.ask("second?")
        expect(chat.answers.last).to_have_text("two")

        toggle.click()
        expect(titles(chat)).to_have_text(["second?", "first?"])
        page.mouse.click(viewport["width"] // 2, viewport["height"] - 150)  # outside the list
        expect(listed).to_be_hidden()
        toggle.click()
        expect(listed).to_be_visible()
        page.keyboard.press("Escape")
        expect(listed).to_be_hidden()

        toggle.click()
        chat.locator(".thread-row").nth(1).locator(".thread-rename").click()
        field = chat.locator(".thread-input")
        expect(field).to_be_focused()
        field.fill("Groceries")
        field.press("Enter")
        expect(titles(chat)).to_have_text(["second?", "Groceries"])
        shot(chat.locator("section.chat"), f"conversations-{name}")

        chat.locator(".thread-row").first.locator(".thread-delete").click()
        expect(chat.locator(".thread-question")).to_have_text(WORDS[locale]["confirm"])
        shot(chat.locator("section.chat"), f"delete-confirm-{name}")
        chat.locator(".thread-delete-yes").click()
        expect(titles(chat)).to_have_text(["Groceries"])
        expect(chat.bubbles).to_have_count(0)  # the deleted conversation was the one shown

        chat.input.fill("third?")
        chat.input.press("Enter")
        expect(listed).to_be_hidden()  # sending closes the list
        expect(chat.answers.last).to_have_text("three")
        toggle.click()
        expect(titles(chat)).to_have_text(["third?", "Groceries"])
    page.context.close()


def pressed(answer: Locator, rating: str | None) -> None:
    """The answer's thumbs: `rating`'s pressed, the other not (None: neither)."""
    for thumb in ("up", "down"):
        expect(answer.locator(f".rate-{thumb}")).to_have_attribute(
            "aria-pressed", "true" if thumb == rating else "false"
        )


def test_a_rating_given_shows_pressed_after_a_reload_and_back_in_the_conversation(
    browser: Browser, served: Served
) -> None:
    script = [scripts.answer("one"), scripts.answer("two"), scripts.answer("three")]
    with served.answering(script):
        page = signed_in(browser, served, "rater", viewport=DESKTOP)
        chat = Chat(page)
        rated = chat.locator(".bubble.bot:has(.rating)")
        chat.ask("first?")
        expect(chat.answers.last).to_have_text("one")
        rated.nth(0).locator(".rate-down").click()
        pressed(rated.nth(0), "down")
        chat.ask("second?")
        expect(chat.answers.last).to_have_text("two")
        expect(rated).to_have_count(2)
        rated.nth(1).locator(".rate-up").click()
        pressed(rated.nth(1), "up")

        page.reload()
        chat = Chat(page)
        rated = chat.locator(".bubble.bot:has(.rating)")
        expect(rated).to_have_count(2)
        pressed(rated.nth(0), "down")
        pressed(rated.nth(1), "up")

        chat.locator(".new").click()
        chat.ask("third?")
        expect(chat.answers.last).to_have_text("three")
        pressed(rated.nth(0), None)  # the new conversation's answer: not rated
        chat.locator(".history-toggle").click()
        expect(titles(chat)).to_have_text(["third?", "first?"])
        chat.locator(".thread-row").nth(1).locator(".thread").click()
        expect(chat.answers).to_have_text(["one", "two"])
        expect(rated).to_have_count(2)
        pressed(rated.nth(0), "down")
        pressed(rated.nth(1), "up")

        rated.nth(0).locator(".rate-up").click()  # changed, knowingly
        pressed(rated.nth(0), "up")
        page.reload()
        chat = Chat(page)
        pressed(chat.locator(".bubble.bot:has(.rating)").nth(0), "up")
    given = sorted((r["question"], r["rating"]) for r in feedback(served) if r["user"] == "rater")
    assert given == [("first?", "up"), ("second?", "up")]
    page.context.close()
