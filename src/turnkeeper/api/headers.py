"""What every answer says about itself, who may call the API from another origin, and the
CORS preflight answered in JSON.

Every response carries `X-Content-Type-Options: nosniff` and a
`Content-Security-Policy`: scripts, styles, fetches and the page's `<base>` from
its own origin only, no plugins, and `frame-ancestors` naming who may frame the
chat (the page's own origin, plus `--frame-ancestors` origins). Without extra
origins, `X-Frame-Options: SAMEORIGIN` says the same to older browsers; it cannot
name several origins, so it is left out when any are given.

Other origins call the API only as `Cors` says: the origins named (never `*`), the
headers the API reads (`authorization`, `content-type`) plus the application's own
(`--cors-header`), and, with `credentials`, cookies and HTTP authentication
(`Access-Control-Allow-Credentials: true`, the caller's origin echoed back).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ConfigError

POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'self'; form-action 'self'"
)
"""Inline styles are allowed: the page's own `<style>`, and Markdown tables' alignment."""

REFUSED = {
    "origin": "This origin may not call the API.",
    "method": "This method may not be called from another origin.",
    "headers": "These headers may not be sent from another origin",
}
READ_HEADERS = ("authorization", "content-type")
"""The request headers the API itself reads, allowed from every origin that may call it."""
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP field name (RFC 9110 token)."""


def security_headers(frame_ancestors: Sequence[str] = ()) -> list[tuple[bytes, bytes]]:
    """The headers every answer carries, framing allowed to the page's origin and these."""
    ancestors = " ".join(["'self'", *frame_ancestors])
    headers = [
        (b"x-content-type-options", b"nosniff"),
        (b"content-security-policy", f"{POLICY}; frame-ancestors {ancestors}".encode()),
    ]
    if not frame_ancestors:
        headers.append((b"x-frame-options", b"SAMEORIGIN"))
    return headers


class SecurityHeaders:
    """ASGI middleware: adds `headers` to every HTTP response."""

    def __init__(self, app: ASGIApp, headers: list[tuple[bytes, bytes]]) -> None:
        self.app = app
        self.headers = headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sent(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *self.headers]
            await send(message)

        await self.app(scope, receive, sent)


@dataclass(frozen=True, slots=True)
class Cors:
    """Who may call the API from another origin (`serve --cors-origin`, `--cors-header`,
    `--cors-credentials`; `create_app`'s and `Assistant.asgi`'s keywords of those names).
    `ConfigError` for credentials without an origin, `*` with them, or a bad header name."""

    origins: tuple[str, ...] = ()
    credentials: bool = False
    """Cookies and HTTP authentication cross: the application's own sign-in."""
    headers: tuple[str, ...] = ()
    """The application's own request headers (`x-user`), besides those the API reads."""

    def __post_init__(self) -> None:
        if self.credentials and not self.origins:
            raise ConfigError("CORS credentials need an origin to allow (--cors-origin)")
        if self.credentials and "*" in self.origins:
            raise ConfigError("CORS credentials cannot be allowed to every origin ('*')")
        for name in self.headers:
            if not HEADER_NAME.fullmatch(name):
                raise ConfigError(f"{name!r} is not an HTTP header name")

    def middleware(self, exposed: Sequence[str]) -> list[Middleware]:
        """The CORS middleware this allows, the `exposed` response headers readable; none
        without origins."""
        if not self.origins:
            return []
        return [
            Middleware(
                JsonCORSMiddleware,
                allow_origins=list(self.origins),
                allow_methods=["GET", "POST", "PATCH", "DELETE"],
                allow_headers=[*READ_HEADERS, *(h.lower() for h in self.headers)],
                allow_credentials=self.credentials,
                expose_headers=list(exposed),
            )
        ]


class JsonCORSMiddleware(CORSMiddleware):
    """Starlette's CORS, its refused preflights answered `{"error": …}` like every error,
    naming the headers refused."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code < 400:
            return response
        reasons = bytes(response.body).decode().removeprefix("Disallowed CORS ").split(", ")
        message = " ".join(self._refused(reason, request_headers) for reason in reasons)
        headers = {
            k: v for k, v in response.headers.items() if k not in ("content-type", "content-length")
        }
        return JSONResponse({"error": message}, response.status_code, headers=headers)

    def _refused(self, reason: str, request_headers: Headers) -> str:
        if reason != "headers":
            return REFUSED.get(reason, "The request is refused.")
        asked = request_headers.get("access-control-request-headers", "")
        names = [h.strip() for h in asked.lower().split(",")]
        return (
            f"{REFUSED['headers']}: {', '.join(h for h in names if h not in self.allow_headers)}."
        )
