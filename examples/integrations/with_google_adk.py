"""loopguard in a Google ADK app, offline: a scripted model that repeats one tool call forever.

Run: python examples/integrations/with_google_adk.py   (needs loopguard-engine[google-adk])
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from loopguard.integrations.google_adk import LoopGuardPlugin


class LoopingModel(BaseLlm):
    """ADK's model API, no network: every answer is the same function call."""

    model: str = "looping-model"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        call = types.FunctionCall(name="check_build", args={"job": 7})
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(function_call=call)]),
            usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=0),
        )


def check_build(job: int) -> str:
    """The status of a CI job."""
    print(f"  ran check_build(job={job})")
    return "status: pending"


agent = LlmAgent(name="ci_helper", model=LoopingModel(), tools=[check_build])
app = App(name="ci_app", root_agent=agent, plugins=[LoopGuardPlugin()])
runner = Runner(app=app, session_service=InMemorySessionService(), auto_create_session=True)
question = types.Content(role="user", parts=[types.Part(text="is build 7 done?")])
for event in runner.run(user_id="demo-user", session_id="demo-session", new_message=question):
    if event.is_final_response() and event.content:
        print("final answer:", "".join(p.text or "" for p in event.content.parts or []))
