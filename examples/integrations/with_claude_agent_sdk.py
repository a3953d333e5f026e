"""loopguard hooks on the Claude Agent SDK, offline: the Claude Code CLI bundled in the
`claude-agent-sdk` wheel talks to a local fake of the Messages API (fake_messages_api.py)
whose "model" repeats one Bash call forever.

Run: python examples/integrations/with_claude_agent_sdk.py
(needs loopguard-engine[claude-agent-sdk])
"""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    ToolUseBlock,
    query,
)
from fake_messages_api import FakeMessagesApi

from loopguard.integrations.claude_agent_sdk import loopguard_hooks


def looping_model(request: dict[str, Any]) -> Any:
    return [("Bash", {"command": "echo 'status: pending'", "description": "check build 7"})]


async def main() -> None:
    home = tempfile.mkdtemp()
    with FakeMessagesApi("Bash", looping_model) as api:
        env = {
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-offline",
            "HOME": home,
            "CLAUDE_CONFIG_DIR": home,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
        options = ClaudeAgentOptions(
            hooks=loopguard_hooks(),
            allowed_tools=["Bash"],
            env=env,
            cwd=home,
            setting_sources=[],
            model="claude-sonnet-4-5",
            max_turns=12,
        )
        async for message in query(prompt="is build 7 done?", options=options):
            if isinstance(message, AssistantMessage):
                for block in message.content:
                    if isinstance(block, ToolUseBlock):
                        print(f"  model asked for {block.name}({block.input['command']!r})")
            elif isinstance(message, ResultMessage):
                print(
                    f"the CLI stopped after {len(api.conversation())} model calls "
                    f"({message.stop_reason})"
                )
        last = api.conversation()[-1]["messages"][-1]["content"]
        seen = next(b["content"] for b in last if b.get("type") == "tool_result")
        print("last tool result the model saw:", seen.splitlines()[0])


asyncio.run(main())
