"""A test assistant whose signed-in users each have a day of 4,000 tokens (issue 31): the
concurrency test runs it in two `turnkeeper worker` processes.

    turnkeeper worker limited:assistant --app-dir tests/apps
"""

from __future__ import annotations

from starlette.requests import Request

from turnkeeper import Assistant, Budget, Limits

TOKENS_PER_DAY = 4000


def lookup() -> str:
    """Look it up."""
    return "found"


def signed_in(request: Request) -> str | None:
    """The reader named by the `x-user` header."""
    return request.headers.get("x-user") or None


assistant = Assistant(
    name="Limited",
    tools=[lookup],
    provider="anthropic",
    budget=Budget(max_iterations=40),
    authenticate=signed_in,
    limits=Limits(tokens_per_day=TOKENS_PER_DAY),
)
