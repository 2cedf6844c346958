"""The anthropic SDK's tool runner (`client.beta.messages.tool_runner`) over the mock API."""

from __future__ import annotations

from anthropic import beta_async_tool

from .. import fake
from .mock_api import MockMessagesApi


def make(spec: fake.Spec) -> fake.Turn:
    server = MockMessagesApi(spec)
    client = server.client()
    tool = beta_async_tool(fake.tool(spec))

    async def turn() -> str:
        server.step = 0
        runner = client.beta.messages.tool_runner(
            model=fake.MODEL,
            max_tokens=1024,
            messages=[{"role": "user", "content": "go"}],
            tools=[tool],
            thread=False,
            max_iterations=spec.calls + 1,
        )
        message = await runner.until_done()
        assert server.step == spec.calls, server.step
        text = "".join(b.text for b in message.content if b.type == "text")
        assert text == fake.ANSWER, text
        return text

    return turn
