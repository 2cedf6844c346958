"""langgraph: `create_react_agent` with one tool, driven by a fake chat model."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool

from .. import fake

if TYPE_CHECKING:  # only the annotation: the module is imported when langgraph needs it
    from langchain_core.runnables import RunnableConfig


def message(body: dict[str, Any]) -> AIMessage:
    calls = [
        {"name": b["name"], "args": b["input"], "id": b["id"], "type": "tool_call"}
        for b in body["content"]
        if b["type"] == "tool_use"
    ]
    text = "".join(b["text"] for b in body["content"] if b["type"] == "text")
    return AIMessage(content=text, tool_calls=calls, id=body["id"])


class FakeChat(BaseChatModel):
    spec: fake.Spec
    bodies: list[dict[str, Any]]

    @property
    def _llm_type(self) -> str:
        return "bench-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FakeChat:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise NotImplementedError("the benchmark runs async")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        await fake.called(self.spec)
        reply = message(self.bodies[fake.step_of(len(messages))])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def make(spec: fake.Spec) -> fake.Turn:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        tool = StructuredTool.from_function(coroutine=fake.tool(spec), name=fake.TOOL_NAME)
        graph = create_react_agent(FakeChat(spec=spec, bodies=fake.script(spec)), [tool])
    config: RunnableConfig = {"recursion_limit": 2 * spec.calls + 10}

    async def turn() -> str:
        state = await graph.ainvoke({"messages": [("user", "go")]}, config=config)
        answer = state["messages"][-1].content
        assert answer == fake.ANSWER, answer
        return str(answer)

    return turn
