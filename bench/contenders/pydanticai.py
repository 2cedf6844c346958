"""pydantic-ai: an `Agent` with one plain tool, driven by a `FunctionModel`."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage, UsageLimits

from .. import fake


def responses(spec: fake.Spec) -> list[ModelResponse]:
    out = []
    for body in fake.script(spec):
        parts: list[Any] = []
        for block in body["content"]:
            if block["type"] == "tool_use":
                parts.append(ToolCallPart(block["name"], block["input"], block["id"]))
            else:
                parts.append(TextPart(block["text"]))
        usage = RequestUsage(input_tokens=10, output_tokens=5)
        out.append(ModelResponse(parts=parts, usage=usage, model_name=fake.MODEL))
    return out


def make(spec: fake.Spec) -> fake.Turn:
    replies = responses(spec)

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await fake.called(spec)
        reply = replies[fake.step_of(len(messages))]
        return ModelResponse(parts=list(reply.parts), usage=reply.usage, model_name=fake.MODEL)

    agent = Agent(FunctionModel(model), tools=[fake.tool(spec)])
    limits = UsageLimits(request_limit=None)

    async def turn() -> str:
        result = await agent.run("go", usage_limits=limits)
        assert result.output == fake.ANSWER, result.output
        return result.output

    return turn
