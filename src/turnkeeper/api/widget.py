"""The chat widget's files: `/` (the full-page chat), `/widget.js` and the modules it
imports, `/widget/*.js`, `/widget.css`,
`/vendor/markdown-it.esm.min.mjs` (web/vendor/README.md), `/assistant.json` (the
assistant's name, its locales, whether readers sign in) and `/locales/{lang}.json`, the
same catalogs the CLI resolves keys from with the assistant's own entries over them, so
the widget and the server never disagree on a sentence.

They need no token and are plain files: no build step, nothing fetched from elsewhere.
Each file carries an ETag, so a browser revalidating it (`no-cache`) gets a `304`, not
the file again. The JavaScript may be loaded by a page of any origin
(`Access-Control-Allow-Origin: *`: a module is fetched with CORS, and the code is the
same for everyone); what it may call is what `cors_origins` allows.
Mounted under a prefix (`Assistant.asgi()`), the page names it in a `<base>`, so the
widget finds its files and the API under the same prefix.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Awaitable, Callable
from importlib import resources

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..i18n import Catalogs
from .errors import ApiError

JAVASCRIPT = "text/javascript; charset=utf-8"
MODULES = sorted(
    entry.name
    for entry in resources.files("turnkeeper").joinpath("web", "widget").iterdir()
    if entry.name.endswith(".js")
)
"""The widget's ES modules (web/widget/), which widget.js imports."""
FILES = {
    "/widget.js": ("widget.js", JAVASCRIPT),
    **{f"/widget/{name}": (f"widget/{name}", JAVASCRIPT) for name in MODULES},
    "/widget.css": ("widget.css", "text/css; charset=utf-8"),
    "/vendor/markdown-it.esm.min.mjs": ("vendor/markdown-it.esm.min.mjs", JAVASCRIPT),
}
NO_CACHE = {"cache-control": "no-cache"}
ANY_ORIGIN = {"access-control-allow-origin": "*"}


def _read(name: str) -> bytes:
    return resources.files("turnkeeper").joinpath("web", *name.split("/")).read_bytes()


def _file(path: str, name: str, media_type: str) -> Route:
    body = _read(name)
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    headers = {**NO_CACHE, "etag": etag, **(ANY_ORIGIN if media_type == JAVASCRIPT else {})}

    async def endpoint(request: Request) -> Response:
        if etag in request.headers.get("if-none-match", ""):
            return Response(status_code=304, headers=headers)
        return Response(body, media_type=media_type, headers=headers)

    return Route(path, endpoint)


def _page(name: str) -> Callable[[Request], Awaitable[Response]]:
    """The full-page chat, titled with the assistant's name, its `<base>` the mount's prefix."""
    template = _read("index.html").decode("utf-8")
    titled = template.replace("<title>turnkeeper</title>", f"<title>{html.escape(name)}</title>")

    async def endpoint(request: Request) -> Response:
        prefix = request.scope.get("root_path", "").rstrip("/")
        base = f'<base href="{html.escape(prefix, quote=True)}/">'
        body = titled.replace("<head>", f"<head>\n  {base}", 1)
        return Response(body, media_type="text/html; charset=utf-8", headers=NO_CACHE)

    return endpoint


def routes(name: str, catalogs: Catalogs, *, users: bool = False) -> list[Route]:
    """The widget's routes: the chat page, its script and modules, style and vendored
    Markdown library, `assistant.json` (`name`, `locales`, `users`) and each catalog with
    the assistant's entries."""
    about = {"name": name, "locales": list(catalogs.locales), "users": users}

    async def described(request: Request) -> Response:
        return JSONResponse(about, headers=NO_CACHE)

    async def catalog(request: Request) -> Response:
        lang = request.path_params["lang"]
        if lang not in catalogs.locales:
            known = ", ".join(catalogs.locales)
            raise ApiError(404, f"There is no catalog for {lang!r}; there are: {known}.")
        return JSONResponse(dict(catalogs.catalog(lang)), headers=NO_CACHE)

    return [
        Route("/", _page(name)),
        *(_file(path, name, media) for path, (name, media) in FILES.items()),
        Route("/assistant.json", described),
        Route("/locales/{lang}.json", catalog),
    ]
