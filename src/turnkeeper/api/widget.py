"""The chat widget's files: `/` (the full-page chat), `/widget.js`, `/widget.css`, and
`/locales/{lang}.json`, the same catalogs the CLI resolves keys from (with any entries
the application added), so the widget and the server never disagree on a sentence.

They need no token and are plain files: no build step, nothing fetched from elsewhere.
"""

from __future__ import annotations

from importlib import resources

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .. import i18n
from .errors import ApiError

FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/widget.js": ("widget.js", "text/javascript; charset=utf-8"),
    "/widget.css": ("widget.css", "text/css; charset=utf-8"),
}


def _file(path: str, name: str, media_type: str) -> Route:
    body = resources.files("turnkeeper").joinpath("web", name).read_bytes()

    async def endpoint(request: Request) -> Response:
        return Response(body, media_type=media_type, headers={"cache-control": "no-cache"})

    return Route(path, endpoint)


async def catalog(request: Request) -> Response:
    lang = request.path_params["lang"]
    if lang not in i18n.LOCALES:
        known = ", ".join(i18n.LOCALES)
        raise ApiError(404, f"There is no catalog for {lang!r}; there are: {known}.")
    return JSONResponse(dict(i18n.catalog(lang)), headers={"cache-control": "no-cache"})


def routes() -> list[Route]:
    return [
        *(_file(path, name, media) for path, (name, media) in FILES.items()),
        Route("/locales/{lang}.json", catalog),
    ]
