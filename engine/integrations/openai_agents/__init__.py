"""OpenAI Agents SDK adapter: `await LoopGuard().run(agent, input, session_id=...)`.

Needs `pip install "loopguard-engine[openai-agents]"`. See docs/integrations.md.
"""

from loopguard.integrations._missing import needs

try:
    from loopguard.integrations.openai_agents.runner import LoopGuard
except ImportError as exc:  # the framework is not installed: say which extra brings it
    raise needs("openai-agents", exc) from exc

__all__ = ["LoopGuard"]
