"""The API fuzzed from its own OpenAPI document with schemathesis, every check on, in-process.

schemathesis calls the ASGI app on its own event loop, once per request with
the app's lifespan around it, so the app here opens a SQLite store in a
temporary folder on startup and closes it on shutdown; the file keeps the
state between requests. Half the cases use a real conversation's token and
ids, so bodies and queries reach the handlers instead of stopping at `404`.
Both positive and negative cases are generated, a bounded number per
operation, so the run stays well under a minute.

Both ways readers are known are fuzzed: tokens, and sign-in (`authenticate`, here an
`x-user` header the document does not declare: it is the host application's; half
the cases send the owner's). With tokens every check runs but `ignored_auth`, which
expects `401`/`403` for a missing or wrong token: the contract answers `404`, exactly
as for an unknown id, so ids cannot be probed (tests/security/test_access.py holds the
API to that). With sign-in, no operation declares a scheme, and every check runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.core.result import Ok
from schemathesis.generation import GenerationMode
from schemathesis.python.asgi import get_client
from schemathesis.specs.openapi.checks import ignored_auth
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from tests.api.test_routes import HeldQueue
from turnkeeper.api import create_app
from turnkeeper.store import Store, open_store

PROTOCOLS = {
    "/api/ag-ui",
    "/api/chat",
    "/api/chat/{chat_id}/stream",
    "/api/chat/{chat_id}/messages",
}
EXAMPLES = 40
"""Cases per operation and generation mode."""


class FuzzedApp:
    """The API on a SQLite store that the lifespan opens and closes."""

    def __init__(self, path: Path, users: bool = False) -> None:
        self.url = f"sqlite:///{path}"
        self.users = users
        self.store: Store | None = None
        self.app: Any = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        await self.app(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.store = await open_store(self.url)
                authenticate = signed_in if self.users else None
                self.app = create_app(self.store, HeldQueue(), authenticate=authenticate)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.store is not None:
                    await self.store.close()
                await send({"type": "lifespan.shutdown.complete"})
                return


def signed_in(request: Request) -> str | None:
    """The host application's sign-in, as a test stands it in: an `x-user` header."""
    return request.headers.get("x-user")


def real_ids(app: FuzzedApp) -> dict[str, str]:
    """A conversation with one queued turn: its ids, and the header that opens it."""
    with get_client(app) as client:  # type: ignore[arg-type]
        signed = {"x-user": "reader-1"} if app.users else {}
        created = client.post("/api/conversations", headers=signed).json()
        opens = signed or {"authorization": f"Bearer {created['token']}"}
        turn = client.post(
            f"/api/conversations/{created['conversation_id']}/turns",
            json={"text": "hello"},
            headers=opens,
        ).json()
    return {"conversation_id": created["conversation_id"], "turn_id": turn["turn_id"], **opens}


@pytest.mark.parametrize("users", [False, True], ids=["tokens", "signed-in"])
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_the_api_holds_to_its_document_under_fuzzing(
    tmp_path: Path, mode: GenerationMode, users: bool
) -> None:
    fuzzed = FuzzedApp(tmp_path / "turnkeeper.db", users)
    schema = schemathesis.openapi.from_asgi("/openapi.json", fuzzed)
    operations = [r.ok() for r in schema.get_all_operations() if isinstance(r, Ok)]
    assert len(operations) == 17
    # The protocols' routes start turns whose streams a held queue never ends: their
    # malformed bodies and refusals are tests/api/test_protocols.py's.
    operations = [o for o in operations if o.path not in PROTOCOLS]
    assert len(operations) == 13
    ids = real_ids(fuzzed)

    @settings(
        max_examples=EXAMPLES * len(operations),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def fuzz(data: st.DataObject) -> None:
        operation = data.draw(st.sampled_from(operations), label="operation")
        case = data.draw(operation.as_strategy(generation_mode=mode), label="case")
        owner = data.draw(st.booleans(), label="as the owner")
        # The held turn never ends, nor would its stream: tests/api/test_stream.py has it.
        if owner and not operation.path.endswith("/events"):
            for name in case.path_parameters or {}:
                case.path_parameters[name] = ids[name]
            opens = {k: ids[k] for k in ("authorization", "x-user") if k in ids}
            case.headers = {**(case.headers or {}), **opens}
        case.call_and_validate(excluded_checks=[] if users else [ignored_auth])

    fuzz()
