"""Microsoft Agent Framework middleware: `Agent(client, tools, middleware=LoopGuard().middleware)`.

Needs `pip install "loopguard-engine[agent-framework]"`. See docs/integrations.md.
"""

from loopguard.integrations._missing import needs

try:
    from loopguard.integrations.agent_framework.middleware import LoopGuard, loopguard_middleware
except ImportError as exc:  # the framework is not installed: say which extra brings it
    raise needs("agent-framework", exc) from exc

__all__ = ["LoopGuard", "loopguard_middleware"]
