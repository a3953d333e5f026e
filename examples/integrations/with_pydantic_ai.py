"""loopguard in a pydantic-ai agent, offline: a FunctionModel that repeats one tool call forever.

Run: python examples/integrations/with_pydantic_ai.py   (needs loopguard-engine[pydantic-ai])
"""

from __future__ import annotations

import itertools

from pydantic_ai import Agent, models
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from loopguard.integrations.pydantic_ai import LoopGuard

models.ALLOW_MODEL_REQUESTS = False  # no real model is ever called
ids = itertools.count(1)


def looping_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(
        parts=[ToolCallPart("check_build", {"job": 7}, tool_call_id=f"call_{next(ids)}")]
    )


def check_build(job: int) -> str:
    """The status of a CI job."""
    print(f"  ran check_build(job={job})")
    return "status: pending"


agent = Agent(FunctionModel(looping_model), tools=[check_build], capabilities=[LoopGuard()])
result = agent.run_sync("is build 7 done?")
print("final answer:", result.output)
