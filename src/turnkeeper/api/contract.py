"""The OpenAPI document as a given app serves it: how its readers are known, where it is
mounted, and every status each operation can answer.

`openapi.DOCUMENT` is the API as built from its types. An app serves it as it is
(`served()`):

- **readers**: with tokens, each operation on a conversation or turn declares the
  `bearer` scheme; with sign-in (`authenticate`), readers are known by the host
  application's own sign-in, which the document cannot name: no operation declares
  a scheme, and every `/api/*` operation may answer `401`;
- **servers**: the prefix the app is mounted at (`root_path`), or `/`;
- **statuses**: every operation may answer `500` (a bug, logged) and `503` with
  `retry-after` (the store out of reach, or a mounted app not started yet).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from .openapi import DOCUMENT

SIGNED_IN = (
    " Readers are known by the host application's own sign-in (`authenticate`): every"
    " `/api/*` call needs a signed-in user, else `401`; a conversation opens only for the"
    " user who started it. No bearer token is used."
)
TOKENS = (
    " Readers are known by tokens: `POST /api/conversations` answers one, and every other"
    " `/api/*` call on that conversation sends it as `Authorization: Bearer <token>`."
)
UNAVAILABLE: dict[str, Any] = {
    "description": "not available now (the store cannot be reached, or a mounted app has not"
    " started): try again after `retry-after` seconds",
    "headers": {"retry-after": {"schema": {"type": "string"}, "required": True}},
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}
BROKEN: dict[str, Any] = {
    "description": "a fault of the server (logged)",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}


@functools.cache
def served(users: bool, prefix: str = "") -> dict[str, Any]:
    """The document an app serves: with sign-in (`users`) or tokens, mounted at `prefix`."""
    document = copy.deepcopy(DOCUMENT)
    document["servers"] = [{"url": prefix or "/"}]
    document["info"]["description"] += SIGNED_IN if users else TOKENS
    for path, operations in document["paths"].items():
        for operation in operations.values():
            responses = operation["responses"]
            responses.setdefault("500", BROKEN)
            responses["503"] = UNAVAILABLE
            if users:
                operation.pop("security", None)
                if path.startswith("/api/"):
                    responses.setdefault("401", BROKEN | {"description": "not signed in"})
    if users:
        document["components"].pop("securitySchemes", None)
    return document
