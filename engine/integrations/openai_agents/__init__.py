"""OpenAI Agents SDK adapter: `await LoopGuard().run(agent, input, session_id=...)`.

Needs `pip install "loopguard-engine[openai-agents]"`. See docs/integrations.md.
"""

from .runner import LoopGuard

__all__ = ["LoopGuard"]
