"""loopguard in a CrewAI crew, offline: a scripted LLM that asks for one tool call forever.

Run: python examples/integrations/with_crewai.py   (needs loopguard-engine[crewai])
"""

from __future__ import annotations

import os

# Offline: no CrewAI telemetry, no first-run tracing prompt.
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("CREWAI_TESTING", "true")

from typing import Any, ClassVar  # noqa: E402

from crewai import Agent, Crew, Task  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import tool  # noqa: E402

from loopguard.integrations.crewai import LoopGuard  # noqa: E402

LoopGuard().register()  # every crew and agent made from here on is guarded


class LoopingLLM(BaseLLM):
    """A model that asks for the build status on every turn, whatever it is told."""

    calls: ClassVar[int] = 0

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        LoopingLLM.calls += 1
        print(f"  model call {LoopingLLM.calls}, last thing it saw: {_tail(messages)}")
        return 'Thought: still waiting\nAction: check_build\nAction Input: {"job": 7}'

    def supports_function_calling(self) -> bool:
        return False


def _tail(messages: Any) -> str:
    text = str(messages[-1]["content"]).rsplit("Observation:", 1)[-1].strip()
    return text.splitlines()[0][:90] if text else ""


@tool("check_build")
def check_build(job: int) -> str:
    """The status of a CI job."""
    print(f"  ran check_build(job={job})")
    return "status: pending"


agent = Agent(
    role="ci helper",
    goal="tell whether build 7 is done",
    backstory="watches CI",
    llm=LoopingLLM(model="looping"),
    tools=[check_build],
)
task = Task(description="is build 7 done?", expected_output="yes or no", agent=agent)
result = Crew(agents=[agent], tasks=[task]).kickoff()
print(f"the crew stopped after {LoopingLLM.calls} model calls")
print("final answer:", result.raw)
