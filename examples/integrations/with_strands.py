"""loopguard in a Strands agent, offline: a scripted model that repeats one tool call forever.

Run: python examples/integrations/with_strands.py   (needs loopguard-engine[strands])
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncGenerator
from typing import Any

from strands import Agent, tool
from strands.models.model import Model

from loopguard.integrations.strands import LoopGuardHooks


class LoopingModel(Model):
    """Strands' model API, no network: every answer is the same tool call, with a fresh id."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> dict[str, Any]:
        return {}

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError
        yield

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        use = {"toolUseId": f"call_{next(self.ids)}", "name": "check_build"}
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {"toolUse": use}}}
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps({"job": 7})}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


@tool
def check_build(job: int) -> str:
    """The status of a CI job."""
    print(f"  ran check_build(job={job})")
    return "status: pending"


agent = Agent(
    model=LoopingModel(), tools=[check_build], hooks=[LoopGuardHooks()], callback_handler=None
)
result = agent("is build 7 done?")
print("final answer:", "".join(block.get("text", "") for block in result.message["content"]))
