"""The widget's files and catalogs, served by the API app; CORS only for the origins given."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import httpx
import pytest

from tests.api.test_routes import HeldQueue, client_for
from turnkeeper import i18n
from turnkeeper.api import create_app
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
        served = {lang: (await client.get(f"/locales/{lang}.json")).json() for lang in i18n.LOCALES}
        unknown = await client.get("/locales/xx.json")
    for lang, catalog in served.items():
        assert catalog == dict(i18n.catalog(lang))
    shipped = resources.files("turnkeeper").joinpath("locales", "es.json").read_text("utf-8")
    assert served["es"]["notices.stopped"] == json.loads(shipped)["notices.stopped"] == "Detenido."
    assert unknown.status_code == 404
    assert unknown.json() == {"error": "There is no catalog for 'xx'; there are: en, es."}


def test_every_label_the_widget_uses_is_in_every_catalog() -> None:
    script = resources.files("turnkeeper").joinpath("web", "widget.js").read_text("utf-8")
    for lang in i18n.LOCALES:
        shipped = json.loads(
            resources.files("turnkeeper").joinpath("locales", f"{lang}.json").read_text("utf-8")
        )
        used = {key for key in shipped if key.startswith("ui.")}
        assert used == {key for key in i18n.catalog("en") if key.startswith("ui.")}
        for key in used:
            assert f'"{key}"' in script, f"{key} is in the catalogs but the widget never shows it"


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
