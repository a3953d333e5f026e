"""Claude Agent SDK hooks: `ClaudeAgentOptions(hooks=loopguard_hooks())`.

Needs `pip install "loopguard-engine[claude-agent-sdk]"`. See docs/integrations.md.
"""

from loopguard.integrations._missing import needs

try:
    from loopguard.integrations.claude_agent_sdk.hooks import ClaudeLoopGuard, loopguard_hooks
except ImportError as exc:  # the framework is not installed: say which extra brings it
    raise needs("claude-agent-sdk", exc) from exc

__all__ = ["ClaudeLoopGuard", "loopguard_hooks"]
