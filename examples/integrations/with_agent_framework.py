"""loopguard in a Microsoft Agent Framework agent, offline: a scripted chat client whose model
asks for one tool call forever.

Run: python examples/integrations/with_agent_framework.py
(needs loopguard-engine[agent-framework])
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
    tool,
)

from loopguard.integrations.agent_framework import LoopGuard

ids = itertools.count(1)


class LoopingClient(FunctionInvocationLayer, ChatMiddlewareLayer, BaseChatClient):  # type: ignore[misc]
    """A chat client (the framework's layer order) whose model polls the build forever."""

    calls = 0

    def _inner_get_response(self, *, messages: Any, stream: bool, options: Any, **kw: Any) -> Any:
        LoopingClient.calls += 1
        call = Content.from_function_call(
            call_id=f"call_{next(ids)}", name="check_build", arguments={"job": 7}
        )

        async def reply() -> ChatResponse:
            return ChatResponse(messages=Message(role="assistant", contents=[call]))

        return reply()


@tool
def check_build(job: int) -> str:
    """The status of a CI job."""
    print(f"  ran check_build(job={job})")
    return "status: pending"


async def main() -> None:
    agent = Agent(client=LoopingClient(), tools=[check_build], middleware=LoopGuard().middleware)
    session = agent.create_session()  # one loopguard session per AgentSession
    result = await agent.run("is build 7 done?", session=session)
    print(f"the agent stopped after {LoopingClient.calls} model calls")
    print("final answer:", result.messages[-1].text)


asyncio.run(main())
