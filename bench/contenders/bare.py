"""The baseline: a bare hand-written loop over the fake model's dicts."""

from __future__ import annotations

from typing import Any

from .. import fake


class Model:
    """The fake model as a bare loop would call an SDK: history in, body out."""

    def __init__(self, spec: fake.Spec) -> None:
        self.spec = spec
        self.bodies = fake.script(spec)

    async def create(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        await fake.called(self.spec)
        return self.bodies[fake.step_of(len(messages))]


def make(spec: fake.Spec) -> fake.Turn:
    model = Model(spec)
    tools = {fake.TOOL_NAME: fake.tool(spec)}

    async def turn() -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        while True:
            body = await model.create(messages)
            messages.append({"role": "assistant", "content": body["content"]})
            if body["stop_reason"] != "tool_use":
                return str(body["content"][0]["text"])
            results = []
            for block in body["content"]:
                if block["type"] == "tool_use":
                    output = await tools[block["name"]](**block["input"])
                    results.append(
                        {"type": "tool_result", "tool_use_id": block["id"], "content": output}
                    )
            messages.append({"role": "user", "content": results})

    return turn
