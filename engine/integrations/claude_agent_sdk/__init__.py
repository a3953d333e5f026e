"""Claude Agent SDK hooks: `ClaudeAgentOptions(hooks=loopguard_hooks())`.

Needs `pip install "loopguard-engine[claude-agent-sdk]"`. See docs/integrations.md.
"""

from .hooks import ClaudeLoopGuard, loopguard_hooks

__all__ = ["ClaudeLoopGuard", "loopguard_hooks"]
