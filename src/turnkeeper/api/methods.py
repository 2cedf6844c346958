"""Each path answers for all its methods: the routes of one path (the transcript's `GET`
in routes.py, its `DELETE` and `PATCH` in controls.py) become one route, so `OPTIONS`
(`204`) and a `405` list every method the path has in `Allow`, not only the first
route's. A CORS preflight never gets here: the CORS middleware answers it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

Endpoint = Callable[[Request], Awaitable[Response]]


def one_per_path(routes: Sequence[BaseRoute]) -> list[BaseRoute]:
    """`routes` with those of one path made one, in the place of its first; each answers
    `OPTIONS`."""
    paths: dict[str, list[Route]] = {}
    merged: list[BaseRoute] = []
    for route in routes:
        if not isinstance(route, Route) or route.methods is None:
            merged.append(route)
            continue
        if route.path not in paths:
            paths[route.path] = []
            merged.append(route)
        paths[route.path].append(route)
    return [_merged(paths[r.path]) if isinstance(r, Route) and r.path in paths else r
            for r in merged]  # fmt: skip


def _merged(routes: list[Route]) -> Route:
    handlers: dict[str, Endpoint] = {}
    for route in routes:
        for method in route.methods or ():
            handlers.setdefault(method, route.endpoint)
    allow = ", ".join([*handlers, "OPTIONS"])

    async def dispatch(request: Request) -> Response:
        if request.method == "OPTIONS":
            return Response(status_code=204, headers={"allow": allow})
        return await handlers[request.method](request)

    return Route(routes[0].path, dispatch, methods=[*handlers, "OPTIONS"], name=routes[0].name)
