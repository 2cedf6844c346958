"""An assistant with a caption for a tool it does not have."""

from turnkeeper import Assistant


def lookup(query: str) -> str:
    return query


assistant = Assistant(tools=[lookup], captions={"search": {"en": "Searched"}})
