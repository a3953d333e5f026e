"""loopguard around an OpenAI Agents SDK run, offline: the SDK's ScriptedModel repeats one call.

Run: python examples/integrations/with_openai_agents.py   (needs loopguard-engine[openai-agents])
"""

from __future__ import annotations

from agents import Agent, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, function_call

from loopguard.integrations.openai_agents import LoopGuard

set_tracing_disabled(True)  # offline: no trace export
model = ScriptedModel(
    [[function_call("check_build", {"job": 7}, call_id=f"call_{n}")] for n in range(1, 21)]
)


@function_tool
def check_build(job: int) -> str:
    """The status of a CI job."""
    print(f"  ran check_build(job={job})")
    return "status: pending"


agent = Agent(name="ci-helper", model=model, tools=[check_build])
result = LoopGuard().run_sync(agent, "is build 7 done?", session_id="demo-conversation")
print("final answer:", result.final_output)
