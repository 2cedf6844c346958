"""What every answer says about itself, and the CORS preflight answered in JSON.

Every response carries `X-Content-Type-Options: nosniff` and a
`Content-Security-Policy`: scripts, styles, fetches and the page's `<base>` from
its own origin only, no plugins, and `frame-ancestors` naming who may frame the
chat (the page's own origin, plus `--frame-ancestors` origins). Without extra
origins, `X-Frame-Options: SAMEORIGIN` says the same to older browsers; it cannot
name several origins, so it is left out when any are given.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'self'; form-action 'self'"
)
"""Inline styles are allowed: the page's own `<style>`, and Markdown tables' alignment."""

REFUSED = {
    "origin": "This origin may not call the API.",
    "method": "This method may not be called from another origin.",
    "headers": "These headers may not be sent from another origin.",
}


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


class JsonCORSMiddleware(CORSMiddleware):
    """Starlette's CORS, its refused preflights answered `{"error": …}` like every error."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code < 400:
            return response
        reasons = bytes(response.body).decode().removeprefix("Disallowed CORS ").split(", ")
        message = " ".join(REFUSED.get(reason, "The request is refused.") for reason in reasons)
        headers = {
            k: v for k, v in response.headers.items() if k not in ("content-type", "content-length")
        }
        return JSONResponse({"error": message}, response.status_code, headers=headers)
