"""A test assistant whose one tool gives back what it was given: a model that echoes a
credential into a tool's input has it echoed once more in the tool's result.

    turnkeeper serve echoing:assistant --app-dir tests/apps
"""

from __future__ import annotations

from turnkeeper import Assistant


def echo(text: str) -> str:
    """Say the text back.

    Args:
        text: what to say back
    """
    return f"you said: {text}"


assistant = Assistant(name="Echo", tools=[echo])
