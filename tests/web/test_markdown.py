"""Answers as Markdown in a real browser: what a model writes (emphasis, lists, code, a
table, links) is drawn as such, in English and Spanish, on a desktop and a 390 px phone;
what a hostile answer holds (javascript: links, raw HTML, images) stays inert text, proven
by the flag the payload would set; a notice, and the reader's own words, are never Markdown.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Request, Route, expect

from tests import scripts
from tests.fake_model import HOLD
from tests.web.chat import Chat
from tests.web.conftest import Served

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1024, "height": 760}
PHONE = {"width": 390, "height": 844}

ANSWERS = {
    "en": """**Your order** ships *today*.

1. Pack the `teapot`
2. Print the label

- fragile
- keep dry

```python
print("<b>not bold</b>")
```

| Item | Qty |
|------|----:|
| Teapot | 1 |

Track it with [the carrier](https://carrier.example/track)
or write to [us](mailto:help@shop.example).""",
    "es": """**Tu pedido** sale *hoy*.

1. Empaqueta la `tetera`
2. Imprime la etiqueta

- frágil
- mantener seco

```python
print("<b>sin negrita</b>")
```

| Artículo | Cant. |
|------|----:|
| Tetera | 1 |

Síguelo con [el transportista](https://carrier.example/track)
o escribe a [nosotros](mailto:help@shop.example).""",
}
SEEN = {
    "en": ("Your order", "today", ["Pack the teapot", "Print the label"], ["Item", "Qty"]),
    "es": (
        "Tu pedido",
        "hoy",
        ["Empaqueta la tetera", "Imprime la etiqueta"],
        ["Artículo", "Cant."],
    ),
}
LOCALES = {"en": ("en-US", "You", "Send"), "es": ("es-ES", "Tú", "Enviar")}
NAMES = {"en": "Assistant", "es": "Asistente"}
"""The demo assistant's name in each locale (`assistant.name`)."""


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("lang", ["en", "es"])
def test_an_answer_in_markdown_is_drawn_as_markdown(
    browser: Browser, served: Served, lang: str, viewport: dict[str, int]
) -> None:
    locale, you, send = LOCALES[lang]
    strong, em, steps, headings = SEEN[lang]
    with served.answering([scripts.answer(ANSWERS[lang])]):
        chat = Chat(served.page(browser, locale=locale, viewport=viewport))
        expect(chat.send).to_have_text(send)
        chat.ask("**" + strong + "**?")
        answer = chat.locator(".bubble.bot .markdown")
        expect(answer.locator("strong")).to_have_text([strong])
        expect(answer.locator("em")).to_have_text([em])
        expect(answer.locator("ol > li")).to_have_text(steps)
        expect(answer.locator("ol code")).to_have_count(1)
        expect(answer.locator("ul > li")).to_have_count(2)
        expect(answer.locator("pre > code")).to_contain_text("<b>")  # a code block, as text
        expect(answer.locator("th")).to_have_text(headings)
        expect(answer.locator("td")).to_have_count(2)
        links = answer.locator("a")
        expect(links).to_have_count(2)
        assert links.nth(0).get_attribute("href") == "https://carrier.example/track"
        assert links.nth(1).get_attribute("href") == "mailto:help@shop.example"
        for n in range(2):
            assert links.nth(n).get_attribute("target") == "_blank"
            assert links.nth(n).get_attribute("rel") == "noopener noreferrer"
        assert chat.locator(".log b").count() == 0
        # The reader's own words are never Markdown: shown as typed.
        expect(chat.questions).to_have_text([f"**{strong}**?"])
        expect(chat.locator(".bubble.user strong")).to_have_count(0)
        expect(chat.locator(".who")).to_have_text([you, NAMES[lang]])
        width = chat.page.evaluate("document.documentElement.scrollWidth")
        log = chat.locator(".log").evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert width <= viewport["width"]
        assert log[0] <= log[1], "the answer fits the log; only a wide table or code scrolls"


HOSTILE = """[click me](javascript:window.__pwned=1) and [data](data:text/html,hi)
<img src=x onerror=window.__pwned=2>
<script>window.__pwned=3</script>
![x](https://images.example/x.png)
<a href="javascript:window.__pwned=4">raw link</a>
<javascript:window.__pwned=5>
[fine](https://example.com/fine)"""


def test_hostile_markdown_is_inert_text(browser: Browser, served: Served) -> None:
    with served.answering([scripts.answer(HOSTILE)]):
        chat = Chat(served.page(browser))
        requests: list[Request] = chat.requests()
        chat.ask("say something nasty")
        answer = chat.locator(".bubble.bot .markdown")
        expect(answer).to_contain_text("<img src=x onerror=window.__pwned=2>")
        expect(answer).to_contain_text("<script>window.__pwned=3</script>")
        expect(answer).to_contain_text('<a href="javascript:window.__pwned=4">raw link</a>')
        expect(answer).to_contain_text("[click me](javascript:window.__pwned=1)")
        expect(chat.input).to_be_editable()
        assert chat.locator(".log img, .log script, .log iframe").count() == 0
        hrefs = answer.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
        assert hrefs == ["https://example.com/fine"], "no javascript: nor data: link, no image"
        for text in ("click me", "data", "raw link"):
            chat.locator(".log").get_by_text(text, exact=False).first.click()
        assert chat.page.evaluate("window.__pwned") is None
        chat.page.wait_for_load_state("networkidle")
    assert not [r.url for r in requests if "images.example" in r.url or r.url.endswith("/x")]


def test_a_notice_is_never_markdown(browser: Browser, served: Served) -> None:
    """A catalog's sentence is shown as written, even one that looks like Markdown."""
    with served.answering([HOLD, scripts.answer("never shown")]):
        page = served.page(browser)

        def markdown_like_notice(route: Route) -> None:
            catalog = route.fetch().json()
            catalog["notices.stopped"] = "**Stopped** by `you`"
            route.fulfill(json=catalog)

        page.route("**/locales/en.json", markdown_like_notice)
        page.reload()
        chat = Chat(page)
        chat.ask("take your time")
        chat.stop.click()
        expect(chat.notices).to_have_text(["**Stopped** by `you`"])
        assert chat.locator(".notice strong, .notice code, .notice .markdown").count() == 0
