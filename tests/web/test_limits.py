"""Limits in the browser (issue 31): a turn that uses up the day shows `notices.limit_reached`,
and the next question is refused with the limit and when the reader may ask again, in the
reader's language; the question stays in the text box."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests import scripts
from tests.web.chat import Chat
from tests.web.conftest import serving

pytestmark = pytest.mark.browser

APPS = Path(__file__).resolve().parent / "apps"


@pytest.mark.parametrize(
    ("locale", "notice", "refusal"),
    [
        (
            "en-US",
            "You have reached today's limit, so the assistant stopped before finishing.",
            r"^You have used up today's allowance of the assistant\. "
            r"You can ask again at \d{1,2}:\d{2}",
        ),
        (
            "es-ES",
            "Has alcanzado el límite de hoy, así que el asistente se detuvo antes de terminar.",
            r"^Has agotado lo que puedes usar hoy del asistente\. "
            r"Podrás preguntar de nuevo a las \d{1,2}:\d{2}",
        ),
    ],
)
def test_a_used_up_day_shows_the_notice_then_the_429_and_when_to_ask_again(
    browser: Browser, tmp_path: Path, locale: str, notice: str, refusal: str
) -> None:
    asks = scripts.asks(scripts.tool_use("lookup"))
    asks["usage"] = scripts.usage(input_tokens=300, output_tokens=100)
    app = ("capped:assistant", "--app-dir", str(APPS))
    with serving([asks], tmp_path, *app) as served:
        chat = Chat(served.page(browser, locale=locale))
        chat.ask("look it up")
        expect(chat.notices).to_have_text([notice])
        expect(chat.send).to_be_visible()
        chat.input.fill("and again")
        chat.input.press("Enter")
        expect(chat.trouble).to_be_visible()
        expect(chat.trouble).to_have_text(re.compile(refusal))
        expect(chat.input).to_have_value("and again")  # nothing the reader typed is lost
        assert len(served.model.requests) == 1, "the refused question never reached the model"
