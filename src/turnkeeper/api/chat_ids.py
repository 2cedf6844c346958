"""The protocols' conversation ids: a client's id (AG-UI's `threadId`, the AI SDK's chat
`id`) names a conversation only within its owner's space (docs/design.md §6).

The space is the signed-in user's, or, without sign-in, the bearer token's that created
the conversation. The stored id is derived from both (`c_` and an HMAC-SHA-256 of the
client's id keyed by the space, 32 hex digits), so two owners using the same id have two
conversations, and nobody can name, probe or take another's: whatever id a client sends,
it finds its own conversation or none.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from ..store import new_token
from ..store.records import Guard


@dataclass(frozen=True, slots=True)
class Space:
    """Whose ids a request names: a signed-in `user`, or the holder of a token (the hash
    the store keeps of it). `token` is a new one, to send back, when the request brought
    none (without sign-in, its first request makes the space)."""

    key: str
    token_hash: str
    user: str | None = None
    token: str | None = None

    def conversation(self, client_id: str) -> str:
        """The stored id of the conversation `client_id` names in this space."""
        digest = hmac.new(self.key.encode(), client_id.encode(), hashlib.sha256).hexdigest()
        return f"c_{digest[:32]}"


def user_space(user: str) -> Space:
    """A signed-in user's space (a conversation made in it is guarded by an unused token:
    only the user opens it)."""
    return Space(f"user:{user}", new_token()[1], user=user)


def token_space(token_hash: str) -> Space:
    """The space of the token whose hash this is."""
    return Space(f"token:{token_hash}", token_hash)


def fresh_space() -> Space:
    """A new token's space, the token with it to send back."""
    token, token_hash = new_token()
    return Space(f"token:{token_hash}", token_hash, token=token)


def owns(guard: Guard | None, space: Space) -> bool:
    """Whether the conversation `guard` guards is of the space (`user`, else token)."""
    if guard is None:
        return False
    if space.user is not None:
        return guard.owner == space.user
    return guard.owner is None and hmac.compare_digest(guard.token_hash, space.token_hash)
