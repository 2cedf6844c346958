"""A module that fails while it is imported, as a developer's typo would."""

from turnkeeper import Assistant

assistant = Assistant(tools=[undefined_tool])  # type: ignore[name-defined]  # noqa: F821
