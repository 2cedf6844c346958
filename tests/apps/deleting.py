"""A test assistant whose one tool answers at once: the deleting test runs it in a
`turnkeeper worker` of its own while the test deletes its conversations mid-turn.

    turnkeeper worker deleting:assistant --app-dir tests/apps
"""

from __future__ import annotations

from turnkeeper import Assistant, Budget


def lookup() -> str:
    """Look it up."""
    return "found"


assistant = Assistant(
    name="Deleting", tools=[lookup], provider="anthropic", budget=Budget(max_iterations=200)
)
