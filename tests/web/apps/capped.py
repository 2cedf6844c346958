"""An assistant with a day of 400 tokens for everyone (no sign-in: the limit is the whole
assistant's), for the browser test of limits (issue 31): a call that bills 400 uses the
day up, the turn ends `limit_reached`, and the next question is refused with `429`.

    turnkeeper serve capped:assistant --app-dir tests/web/apps
"""

from __future__ import annotations

from turnkeeper import Assistant, Limits


def lookup() -> str:
    """Look it up."""
    return "found"


assistant = Assistant(tools=[lookup], limits=Limits(tokens_per_day=400))
