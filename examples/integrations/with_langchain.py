"""loopguard in a LangChain v1 agent, offline: a fake model that repeats one tool call forever.

Run: python examples/integrations/with_langchain.py   (needs loopguard-engine[langchain])
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from loopguard.integrations.langchain import LoopGuardMiddleware


class LoopingModel(GenericFakeChatModel):
    """LangChain's fake chat model; `bind_tools` returns itself so the agent can use it."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> LoopingModel:
        return self


def replies() -> Iterator[AIMessage]:
    for n in itertools.count(1):  # the same call, with a fresh call id, forever
        yield AIMessage(
            "", tool_calls=[{"name": "check_build", "args": {"job": 7}, "id": f"call_{n}"}]
        )


@tool
def check_build(job: int) -> str:
    """The status of a CI job."""
    print(f"  ran check_build(job={job})")
    return "status: pending"


agent = create_agent(
    LoopingModel(messages=replies()),
    [check_build],
    middleware=[LoopGuardMiddleware()],
    checkpointer=InMemorySaver(),
)
state = agent.invoke(
    {"messages": [{"role": "user", "content": "is build 7 done?"}]},
    {"configurable": {"thread_id": "demo-thread"}},
)
print("final answer:", state["messages"][-1].text)
