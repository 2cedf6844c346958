"""The widget's files and catalogs, served by the API app; CORS only for the origins given."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import httpx
import pytest

from tests.api.test_routes import HeldQueue, client_for
from turnkeeper import i18n
from turnkeeper.api import create_app
from turnkeeper.i18n import Catalogs
from turnkeeper.store import Store


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/turnkeeper.db"  # the files do not depend on the store


@pytest.mark.parametrize(
    ("path", "media", "holds"),
    [
        ("/", "text/html", "<turnkeeper-chat"),
        ("/widget.js", "text/javascript", 'customElements.define("turnkeeper-chat"'),
        ("/widget.css", "text/css", ".bubble"),
        ("/vendor/markdown-it.esm.min.mjs", "text/javascript", "/*! markdown-it 15.0.3 | MIT"),
    ],
)
async def test_the_widget_files_need_no_token(
    store: Store, path: str, media: str, holds: str
) -> None:
    async with client_for(create_app(store, HeldQueue())) as client:
        response = await client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(media)
    assert holds in response.text


async def test_the_catalogs_are_the_servers_own(store: Store) -> None:
    async with client_for(create_app(store, HeldQueue())) as client:
        served = {lang: (await client.get(f"/locales/{lang}.json")).json() for lang in i18n.SHIPPED}
        unknown = await client.get("/locales/xx.json")
    for lang, catalog in served.items():
        assert catalog == dict(i18n.catalog(lang))
    shipped = resources.files("turnkeeper").joinpath("locales", "es.json").read_text("utf-8")
    assert served["es"]["notices.stopped"] == json.loads(shipped)["notices.stopped"] == "Detenido."
    assert unknown.status_code == 404
    assert unknown.json() == {"error": "There is no catalog for 'xx'; there are: en, es."}


UI_KEY = re.compile(r'"(ui\.[a-z_]+)"')


def widget_code() -> str:
    """The widget's JavaScript: widget.js and the ES modules it imports (web/widget/)."""
    web = resources.files("turnkeeper").joinpath("web")
    modules = sorted(web.joinpath("widget").iterdir(), key=lambda entry: entry.name)
    files = [web.joinpath("widget.js"), *(m for m in modules if m.name.endswith(".js"))]
    return "\n".join(f.read_text("utf-8") for f in files)


def test_every_label_the_widget_uses_is_in_every_catalog() -> None:
    """Every `ui.*` key the widget names is in every shipped catalog, and every `ui.*` key
    of a catalog is shown by the widget or by the CLI (`ui.you` in transcripts; the assistant's
    lines are labelled with its name, so no catalog has a `ui.bot`)."""
    package = resources.files("turnkeeper")
    script = widget_code()
    python = "".join(p.read_text("utf-8") for p in Path(str(package)).rglob("*.py"))
    in_widget, in_python = set(UI_KEY.findall(script)), set(UI_KEY.findall(python))
    assert {"ui.send", "ui.you", "ui.sign_in", "ui.connection_trouble"} <= in_widget
    assert "ui.you" in in_python
    assert "ui.bot" not in in_python
    for lang in i18n.SHIPPED:
        shipped = json.loads(package.joinpath("locales", f"{lang}.json").read_text("utf-8"))
        labels = {key for key in shipped if key.startswith("ui.")}
        assert labels == {key for key in i18n.catalog("en") if key.startswith("ui.")}
        for key in in_widget:
            assert shipped.get(key, "").strip(), f"{key} is shown by the widget but not in {lang}"
        for key in labels:
            assert key in in_widget | in_python, f"{key} is in the catalogs but nothing shows it"


def test_the_widget_labels_bubbles_with_the_assistants_name_never_bot() -> None:
    script = widget_code()
    assert '"ui.bot"' not in script
    assert '"ui.title"' not in script


async def test_the_assistant_is_described_for_the_widget(store: Store) -> None:
    catalogs = Catalogs({"fr": {"ui.send": "Envoyer"}, "pt-BR": {"ui.send": "Enviar"}})
    app = create_app(store, HeldQueue(), name="Shop helper", catalogs=catalogs)
    async with client_for(app) as client:
        described = await client.get("/assistant.json")
        french = await client.get("/locales/fr.json")
        brazilian = await client.get("/locales/pt-BR.json")
    assert described.status_code == 200
    assert described.json() == {
        "name": "Shop helper",
        "locales": ["en", "es", "fr", "pt-BR"],
        "users": False,
    }
    assert french.json()["ui.send"] == "Envoyer"
    assert french.json()["ui.stop"] == "Stop"  # English where French has no entry
    assert brazilian.json()["ui.sign_in"] == "Sign in to talk to the assistant."


async def test_an_assistant_whose_readers_sign_in_says_so(store: Store) -> None:
    app = create_app(store, HeldQueue(), authenticate=lambda request: None)
    async with client_for(app) as client:
        described = await client.get("/assistant.json")
        refused = await client.post("/api/conversations")
    assert described.json()["users"] is True
    assert refused.status_code == 401
    assert "error" in refused.json()


async def preflight(store: Store, origins: tuple[str, ...], origin: str) -> httpx.Response:
    async with client_for(create_app(store, HeldQueue(), cors_origins=origins)) as client:
        return await client.options(
            "/api/conversations/c_1/turns",
            headers={
                "origin": origin,
                "access-control-request-method": "POST",
                "access-control-request-headers": "authorization, content-type",
            },
        )


async def test_cors_is_off_by_default(store: Store) -> None:
    response = await preflight(store, (), "https://shop.example")
    assert "access-control-allow-origin" not in response.headers


async def test_cors_allows_the_origins_given_and_only_those(store: Store) -> None:
    allowed = await preflight(store, ("https://shop.example",), "https://shop.example")
    other = await preflight(store, ("https://shop.example",), "https://evil.example")
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "https://shop.example"
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    assert other.status_code == 400
    assert "access-control-allow-origin" not in other.headers
    async with client_for(create_app(store, HeldQueue(), cors_origins=["https://a.example"])) as c:
        created = await c.post("/api/conversations", headers={"origin": "https://a.example"})
    assert created.headers["access-control-allow-origin"] == "https://a.example"


VENDOR = "vendor/markdown-it.esm.min.mjs"


async def test_a_widget_file_the_browser_has_is_not_sent_again(store: Store) -> None:
    async with client_for(create_app(store, HeldQueue())) as client:
        first = await client.get(f"/{VENDOR}")
        again = await client.get(f"/{VENDOR}", headers={"if-none-match": first.headers["etag"]})
        changed = await client.get(f"/{VENDOR}", headers={"if-none-match": '"other"'})
    assert first.headers["cache-control"] == "no-cache"
    assert (again.status_code, again.content) == (304, b"")
    assert again.headers["etag"] == first.headers["etag"]
    assert (changed.status_code, changed.content) == (200, first.content)


def test_markdown_it_is_vendored_with_its_license_and_loaded_by_the_widget_itself() -> None:
    """The package carries the library, its license and where it came from; the widget
    imports it from beside itself, so a page needs only the widget's script tag."""
    web = resources.files("turnkeeper").joinpath("web")
    library = web.joinpath(*VENDOR.split("/")).read_text("utf-8")
    license_ = web.joinpath("vendor", "markdown-it.LICENSE").read_text("utf-8")
    readme = web.joinpath("vendor", "README.md").read_text("utf-8")
    script = widget_code()
    assert library.splitlines()[0].startswith("/*! markdown-it 15.0.3 | MIT License")
    assert "export { vr as default }" in library
    assert "Vitaly Puzrin, Alex Kocharin" in license_
    assert "markdown-it-15.0.3.tgz" in readme
    assert f'new URL("{VENDOR}", HOME)' in script
    assert "html: false" in script


def test_the_vendor_folder_is_package_data() -> None:
    pyproject = Path(__file__).resolve().parents[2].joinpath("pyproject.toml").read_text("utf-8")
    assert '"web/vendor/*"' in pyproject
    assert '"web/widget/*"' in pyproject


async def test_every_module_of_the_widget_is_served_as_javascript_to_any_origin(
    store: Store,
) -> None:
    """A browser runs a module only if it is served as JavaScript (`nosniff`), and fetches
    it with CORS: widget.js's imports load on a page of another origin too."""
    folder = resources.files("turnkeeper").joinpath("web", "widget")
    modules = sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".js"))
    assert {"element.js", "client.js", "transcript.js"} <= set(modules)
    async with client_for(create_app(store, HeldQueue())) as client:
        entry = await client.get("/widget.js")
        served = {name: await client.get(f"/widget/{name}") for name in modules}
        unknown = await client.get("/widget/nothing.js")
    assert '"widget/element.js"' in entry.text
    for name, response in served.items():
        assert response.status_code == 200, name
        assert response.headers["content-type"].startswith("text/javascript"), name
        assert response.headers["access-control-allow-origin"] == "*", name
        assert response.text == folder.joinpath(name).read_text("utf-8"), name
    assert unknown.status_code == 404
