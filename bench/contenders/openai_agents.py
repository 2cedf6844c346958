"""openai-agents: an `Agent` with one function tool, driven by a fake `Model`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from .. import fake


def output(body: dict[str, Any]) -> list[Any]:
    items: list[Any] = []
    for block in body["content"]:
        if block["type"] == "tool_use":
            items.append(
                ResponseFunctionToolCall(
                    arguments=json.dumps(block["input"]),
                    call_id=block["id"],
                    name=block["name"],
                    type="function_call",
                    id=block["id"],
                )
            )
        else:
            text = ResponseOutputText(text=block["text"], type="output_text", annotations=[])
            items.append(
                ResponseOutputMessage(
                    id=body["id"],
                    content=[text],
                    role="assistant",
                    status="completed",
                    type="message",
                )
            )
    return items


class FakeModel(Model):
    def __init__(self, spec: fake.Spec) -> None:
        self.spec = spec
        self.outputs = [output(b) for b in fake.script(spec)]

    async def get_response(self, system_instructions: Any, input: Any, *a: Any, **k: Any) -> Any:
        await fake.called(self.spec)
        step = 0 if isinstance(input, str) else fake.step_of(len(input))
        usage = Usage(requests=1, input_tokens=10, output_tokens=5, total_tokens=15)
        return ModelResponse(output=list(self.outputs[step]), usage=usage, response_id=None)

    def stream_response(self, *a: Any, **k: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the benchmark does not stream")


def make(spec: fake.Spec) -> fake.Turn:
    set_tracing_disabled(True)
    agent = Agent(name="bench", model=FakeModel(spec), tools=[function_tool(fake.tool(spec))])
    config = RunConfig(tracing_disabled=True)

    async def turn() -> str:
        result = await Runner.run(agent, "go", max_turns=spec.calls + 1, run_config=config)
        assert result.final_output == fake.ANSWER, result.final_output
        return str(result.final_output)

    return turn
